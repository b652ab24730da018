/* SPDX-License-Identifier: Apache-2.0 */
/* jansson's allocator: blocks from the calling thread's current arena, else from malloc. */
#include <pthread.h>
#include <stddef.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <jansson.h>

#include "kiln/json_arena.h"

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define CHUNK_SIZE ((size_t)64 * 1024)
#define REGION_SIZE ((size_t)256 * 1024 * 1024) /* address space reserved: 4,096 chunks */
#define ALIGN ((size_t)16)

/* The start of each chunk: the next chunk of its arena, or of the free list. */
union chunk {
	union chunk *next;
	max_align_t align;
};

struct kiln_json_arena {
	union chunk *chunks; /* newest first */
	char *cur, *end;     /* what is left of the newest chunk */
	size_t nchunks;
};

/* The reserved range every arena chunk lies in. base and size are set once, before any
 * thread runs, and only read afterwards. */
static char *region_base;
static size_t region_size;
static size_t region_fresh; /* offset of the first chunk never handed out */
static union chunk *region_free;
static pthread_mutex_t region_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;

static _Thread_local struct kiln_json_arena *current;

static union chunk *chunk_take(void)
{
	union chunk *c = NULL;

	pthread_mutex_lock(&region_lock);
	if (region_free) {
		c = region_free;
		UNPOISON(c, CHUNK_SIZE);
		region_free = c->next;
	} else if (region_size - region_fresh >= CHUNK_SIZE) {
		c = (union chunk *)(region_base + region_fresh);
		region_fresh += CHUNK_SIZE;
	}
	pthread_mutex_unlock(&region_lock);
	return c;
}

static void *arena_malloc(size_t n)
{
	struct kiln_json_arena *a = current;
	size_t need = (n + ALIGN - 1) & ~(ALIGN - 1);
	union chunk *c;
	void *p;

	if (!a || need == 0 || need > CHUNK_SIZE - sizeof(union chunk))
		return malloc(n);
	if ((size_t)(a->end - a->cur) < need) {
		if (!(c = chunk_take()))
			return malloc(n); /* the range is used up: an ordinary block */
		c->next = a->chunks;
		a->chunks = c;
		a->nchunks++;
		a->cur = (char *)c + sizeof(union chunk);
		a->end = (char *)c + CHUNK_SIZE;
	}
	p = a->cur;
	a->cur += need;
	return p;
}

/* An ordinary block is wiped before it goes: a tree may hold a secret (a BMC password in an
 * API body or a login body), and jansson frees its strings and dump buffers as they are. */
static void arena_free(void *p)
{
	if (!p || kiln_json_arena_owns(p))
		return; /* an arena block goes with its arena */
	explicit_bzero(p, malloc_usable_size(p));
	free(p);
}

static void install(void)
{
	void *p = mmap(NULL, REGION_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p != MAP_FAILED) {
		region_base = p;
		region_size = REGION_SIZE;
	}
	json_set_alloc_funcs(arena_malloc, arena_free);
}

void kiln_json_arena_install(void)
{
	pthread_once(&install_once, install);
}

int kiln_json_arena_owns(const void *p)
{
	return (uintptr_t)p - (uintptr_t)region_base < region_size;
}

struct kiln_json_arena *kiln_json_arena_new(void)
{
	return calloc(1, sizeof(struct kiln_json_arena));
}

void kiln_json_arena_free(struct kiln_json_arena *a)
{
	union chunk *c, *next;

	if (!a)
		return;
	pthread_mutex_lock(&region_lock);
	for (c = a->chunks; c; c = next) {
		next = c->next;
		c->next = region_free;
		region_free = c;
		/* a use of a tree after its arena went is an error ASan reports */
		POISON((char *)c + sizeof(union chunk), CHUNK_SIZE - sizeof(union chunk));
	}
	pthread_mutex_unlock(&region_lock);
	free(a);
}

struct kiln_json_arena *kiln_json_arena_enter(struct kiln_json_arena *a)
{
	struct kiln_json_arena *prev = current;

	current = a;
	return prev;
}

void kiln_json_arena_leave(struct kiln_json_arena *prev)
{
	current = prev;
}

size_t kiln_json_arena_bytes(const struct kiln_json_arena *a)
{
	return a ? a->nchunks * CHUNK_SIZE : 0;
}
