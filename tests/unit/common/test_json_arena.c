/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for the jansson arena allocator: windows per thread, mixed frees, frees after a window. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "kiln/json_arena.h"

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#endif

static const char doc[] =
	"{\"schema\":\"kiln.agent.report/1\",\"report_id\":\"r1\",\"host\":{\"hostname\":\"gpu01\","
	"\"boot_id\":\"b\"},\"gpus\":[{\"index\":0,\"uuid\":\"GPU-0\",\"temperature_c\":41.5},"
	"{\"index\":1,\"uuid\":\"GPU-1\",\"temperature_c\":42.5}],\"xid_events\":[]}";

static json_t *parse(const char *text)
{
	json_t *v = json_loads(text, JSON_REJECT_DUPLICATES, NULL);

	assert_non_null(v);
	return v;
}

static void dump_equal(const json_t *v, const char *want)
{
	char *text = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
	json_t *w = parse(want);
	char *wtext = json_dumps(w, JSON_COMPACT | JSON_SORT_KEYS);

	assert_non_null(text);
	assert_false(kiln_json_arena_owns(text)); /* outside a window: free() takes it */
	assert_string_equal(text, wtext);
	free(text);
	free(wtext);
	json_decref(w);
}

/* Outside a window every block is malloc's; inside, the tree is the arena's. */
static void test_window(void **state)
{
	struct kiln_json_arena *a = kiln_json_arena_new(), *prev;
	json_t *plain, *v, *added;

	(void)state;
	assert_non_null(a);
	assert_int_equal(kiln_json_arena_bytes(a), 0);
	plain = parse(doc);
	assert_false(kiln_json_arena_owns(plain));
	prev = kiln_json_arena_enter(a);
	assert_null(prev);
	v = parse(doc);
	kiln_json_arena_leave(prev);
	assert_true(kiln_json_arena_owns(v));
	assert_true(kiln_json_arena_owns(json_string_value(json_object_get(v, "report_id"))));
	assert_true(kiln_json_arena_bytes(a) > 0);
	/* a value added after the window is malloc's, freed with the tree */
	added = json_string("later");
	assert_false(kiln_json_arena_owns(added));
	assert_int_equal(json_object_set_new(v, "note", added), 0);
	assert_int_equal(json_object_del(v, "xid_events"), 0); /* an arena value freed */
	assert_int_equal(json_object_set_new(plain, "note", json_string("later")), 0);
	assert_int_equal(json_object_del(plain, "xid_events"), 0);
	{
		char *want = json_dumps(plain, JSON_COMPACT);

		assert_non_null(want);
		dump_equal(v, want);
		free(want);
	}
	json_decref(v);
	json_decref(plain);
	kiln_json_arena_free(a);
#ifdef __SANITIZE_ADDRESS__
	/* the tree's memory is poisoned once its arena went: a late use is an ASan error */
	assert_true(__asan_address_is_poisoned(v));
#endif
	kiln_json_arena_free(NULL);
	assert_int_equal(kiln_json_arena_bytes(NULL), 0);
}

/* A block bigger than a chunk comes from malloc even inside a window; many chunks join. */
static void test_big_blocks(void **state)
{
	struct kiln_json_arena *a = kiln_json_arena_new(), *prev;
	size_t n = 200 * 1024;
	char *text = malloc(n + 16);
	json_t *v, *arr;

	(void)state;
	assert_non_null(a);
	assert_non_null(text);
	memcpy(text, "[\"", 2);
	memset(text + 2, 'x', n);
	memcpy(text + 2 + n, "\"]", 3);
	prev = kiln_json_arena_enter(a);
	v = parse(text);
	arr = json_array();
	for (int i = 0; i < 20000; i++)
		assert_int_equal(json_array_append_new(arr, json_integer(i)), 0);
	kiln_json_arena_leave(prev);
	assert_true(kiln_json_arena_owns(v));
	assert_false(kiln_json_arena_owns(json_string_value(json_array_get(v, 0))));
	assert_int_equal(json_string_length(json_array_get(v, 0)), n);
	assert_true(kiln_json_arena_bytes(a) >= 20000 * sizeof(json_int_t));
	assert_int_equal(json_integer_value(json_array_get(arr, 19999)), 19999);
	json_decref(v);
	json_decref(arr);
	kiln_json_arena_free(a);
	free(text);
}

/* Threads: each parses in its own arena; trees are freed on another thread after the window,
 * mixed with malloc values; another thread's window does not reach this one. */
#define THREADS 4
#define ROUNDS 300

struct handoff {
	pthread_mutex_t m;
	pthread_cond_t c;
	json_t *tree[THREADS];
	struct kiln_json_arena *arena[THREADS];
	int ready[THREADS];
};

static struct handoff ho = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, { 0 },
			     { 0 }, { 0 } };

static void *worker(void *arg)
{
	int me = (int)(intptr_t)arg, peer = (me + 1) % THREADS;
	long bad = 0;

	for (int r = 0; r < ROUNDS; r++) {
		struct kiln_json_arena *a = kiln_json_arena_new(), *prev;
		json_t *v, *mine;
		char *text;

		if (!a)
			return (void *)1;
		prev = kiln_json_arena_enter(a);
		v = json_loads(doc, 0, NULL);
		kiln_json_arena_leave(prev);
		mine = json_loads(doc, 0, NULL); /* outside: malloc */
		if (!v || !mine || !kiln_json_arena_owns(v) || kiln_json_arena_owns(mine))
			bad++;
		json_object_set_new(v, "by", json_integer(me));
		text = json_dumps(mine, JSON_COMPACT);
		if (!text || kiln_json_arena_owns(text))
			bad++;
		free(text);
		json_decref(mine);
		/* hand the tree and its arena to the peer, take the one handed to us */
		pthread_mutex_lock(&ho.m);
		while (ho.ready[me])
			pthread_cond_wait(&ho.c, &ho.m);
		ho.tree[me] = v;
		ho.arena[me] = a;
		ho.ready[me] = 1;
		pthread_cond_broadcast(&ho.c);
		pthread_mutex_unlock(&ho.m);
		pthread_mutex_lock(&ho.m);
		while (!ho.ready[peer])
			pthread_cond_wait(&ho.c, &ho.m);
		v = ho.tree[peer];
		a = ho.arena[peer];
		ho.ready[peer] = 0;
		pthread_cond_broadcast(&ho.c);
		pthread_mutex_unlock(&ho.m);
		if (json_integer_value(json_object_get(v, "by")) != peer ||
		    strcmp(json_string_value(json_object_get(v, "report_id")), "r1") != 0)
			bad++;
		json_decref(v);
		kiln_json_arena_free(a);
	}
	return (void *)(intptr_t)bad;
}

static void test_threads(void **state)
{
	pthread_t t[THREADS];

	(void)state;
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i), 0);
	for (int i = 0; i < THREADS; i++) {
		void *bad = (void *)1;

		assert_int_equal(pthread_join(t[i], &bad), 0);
		assert_null(bad);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_big_blocks),
		cmocka_unit_test(test_threads),
	};

	kiln_json_arena_install();
	kiln_json_arena_install(); /* idempotent */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
