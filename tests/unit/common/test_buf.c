/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests for the capped byte buffer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kiln/buf.h"
#include "kiln/error.h"

static void test_append_and_grow(void **state)
{
	struct kiln_buf b;
	char chunk[100];

	(void)state;
	kiln_buf_init(&b, 0);
	assert_null(b.data);
	memset(chunk, 'x', sizeof(chunk));
	for (int i = 0; i < 100; i++)
		assert_int_equal(kiln_buf_append(&b, chunk, sizeof(chunk)), 0);
	assert_int_equal(b.len, 10000);
	assert_true(b.cap > b.len);
	assert_int_equal(b.data[b.len], '\0');
	assert_int_equal(strlen(b.data), 10000);
	kiln_buf_free(&b);
	assert_null(b.data);
	assert_int_equal(b.len, 0);
}

static void test_puts_printf(void **state)
{
	struct kiln_buf b;

	(void)state;
	kiln_buf_init(&b, 0);
	assert_int_equal(kiln_buf_puts(&b, "gpu"), 0);
	assert_int_equal(kiln_buf_printf(&b, "[%02d-%02d]", 1, 32), 0);
	assert_string_equal(b.data, "gpu[01-32]");
	assert_int_equal(b.len, 10);
	assert_int_equal(kiln_buf_printf(&b, "%s", ""), 0);
	assert_int_equal(b.len, 10);
	kiln_buf_reset(&b);
	assert_int_equal(b.len, 0);
	assert_string_equal(b.data, "");
	kiln_buf_free(&b);
}

static void test_cap(void **state)
{
	struct kiln_buf b;

	(void)state;
	kiln_buf_init(&b, 8);
	assert_int_equal(kiln_buf_puts(&b, "12345678"), 0);
	assert_int_equal(kiln_buf_puts(&b, "9"), KILN_ETOOBIG);
	assert_non_null(strstr(kiln_error_last(), "8-byte limit"));
	assert_string_equal(b.data, "12345678"); /* unchanged */
	assert_int_equal(b.len, 8);
	assert_int_equal(kiln_buf_append(&b, "", 0), 0);
	kiln_buf_reset(&b);
	assert_int_equal(kiln_buf_printf(&b, "%d", 123456789), KILN_ETOOBIG);
	assert_int_equal(b.len, 0);
	assert_int_equal(kiln_buf_append(&b, "x", SIZE_MAX), KILN_ETOOBIG);
	kiln_buf_free(&b);
}

static void test_steal(void **state)
{
	struct kiln_buf b;
	char *p;

	(void)state;
	kiln_buf_init(&b, 0);
	assert_null(kiln_buf_steal(&b)); /* empty: NULL */
	assert_int_equal(kiln_buf_puts(&b, "hello"), 0);
	p = kiln_buf_steal(&b);
	assert_string_equal(p, "hello");
	assert_null(b.data);
	assert_int_equal(b.len, 0);
	assert_int_equal(b.cap, 0);
	free(p);
	/* usable again after a steal */
	assert_int_equal(kiln_buf_puts(&b, "again"), 0);
	assert_string_equal(b.data, "again");
	kiln_buf_free(&b);
	kiln_buf_free(&b);
	kiln_buf_free(NULL);
}

/* Room made in place: len unchanged, filled by the caller, the cap still holds. */
static void test_reserve(void **state)
{
	struct kiln_buf b;

	(void)state;
	kiln_buf_init(&b, 16);
	assert_int_equal(kiln_buf_puts(&b, "ab"), 0);
	assert_int_equal(kiln_buf_reserve(&b, 10), 0);
	assert_int_equal(b.len, 2);
	assert_true(b.cap >= 13);
	memcpy(b.data + b.len, "cdefghijkl", 10);
	b.len += 10;
	b.data[b.len] = '\0';
	assert_string_equal(b.data, "abcdefghijkl");
	assert_int_equal(kiln_buf_reserve(&b, 5), KILN_ETOOBIG);
	assert_int_equal(b.len, 12);
	kiln_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_append_and_grow),
		cmocka_unit_test(test_puts_printf),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_steal),
		cmocka_unit_test(test_reserve),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
