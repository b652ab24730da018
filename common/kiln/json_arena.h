/* SPDX-License-Identifier: Apache-2.0 */
/* jansson trees allocated from a bump arena owned by what owns the tree, thread by thread. */
#ifndef KILN_JSON_ARENA_H
#define KILN_JSON_ARENA_H

#include <stddef.h>

/*
 * jansson's allocator is process-wide (json_set_alloc_funcs). kiln_json_arena_install puts
 * in functions that serve a block from the calling thread's current arena when one is
 * entered (kiln_json_arena_enter), from malloc otherwise. Arena blocks come from one
 * reserved address range, so the installed free tells them apart by address alone: an
 * arena block is left alone (it goes with its arena), any other block is free()d. Blocks
 * from malloc carry nothing extra, so what jansson hands out outside a window (json_dumps)
 * is still free()d as before.
 *
 * Rules: install once, before any jansson value exists and before threads start. Enter an
 * arena only around calls that build a tree (json_loadb); inside the window nothing jansson
 * allocates may be given to free() (no json_dumps there). The arena's owner frees it only
 * after the tree's last use on any thread (json_decref of an arena tree afterwards is fine
 * as long as the arena lives; a value added later to the tree comes from malloc and is
 * free()d as usual). A thread's window affects only that thread.
 */

struct kiln_json_arena;

/* Installs the allocator (idempotent). Without it, arenas are never used: malloc serves
 * every block. */
void kiln_json_arena_install(void);

/* A new, empty arena (no memory taken until its first block); NULL when out of memory. */
struct kiln_json_arena *kiln_json_arena_new(void);
/* Frees every block of a; NULL is fine. No tree built in it may be used afterwards. */
void kiln_json_arena_free(struct kiln_json_arena *a);

/* Makes a the calling thread's current arena (NULL: none) and returns the previous one,
 * for kiln_json_arena_leave. */
struct kiln_json_arena *kiln_json_arena_enter(struct kiln_json_arena *a);
void kiln_json_arena_leave(struct kiln_json_arena *prev);

/* Bytes of arena memory a holds (its chunks), 0 for NULL. */
size_t kiln_json_arena_bytes(const struct kiln_json_arena *a);
/* 1 when p is a block from some arena (the installed free leaves those alone). */
int kiln_json_arena_owns(const void *p);

#endif
