/* SPDX-License-Identifier: Apache-2.0 */
/* What a BMC's answer may cost kilnd: a body cap per kind of resource, and one budget, shared
 * by every Redfish loop of the process, of the memory the parsed answers hold at once. */
#ifndef KILN_REDFISH_BUDGET_H
#define KILN_REDFISH_BUDGET_H

#include <stddef.h>

#include <jansson.h>

/* A resource (service root, System, Manager, Chassis, Thermal, Power, sensors, inventory,
 * sessions, tasks): the largest in ../shared/redfish-mockups is an iLO 5 Thermal of 62 kB, a
 * System at most 13 kB. */
#define RF_BODY_RESOURCE_MAX (1u << 20)
/* A page of a log's entries: the largest there is an iLO 5 IEL page of 340 kB. */
#define RF_BODY_LOG_MAX (4u << 20)
/* An error answer is parsed for its message only up to this. */
#define RF_BODY_ERROR_PARSE_MAX (64u << 10)

/* Estimated tree bytes: an answer estimated at most this is parsed outside the budget (a
 * healthy BMC's answers never wait for a hostile one's). */
#define RF_PARSE_FREE ((size_t)1 << 20)
/* One answer estimated above this is refused unparsed (1 MiB of "{}," is ~75 MB of tree). */
#define RF_PARSE_ONE_MAX ((size_t)48 << 20)
/* Every loop's answers held parsed at once, estimated. */
#define RF_PARSE_BUDGET ((size_t)96 << 20)
/* How long a parse waits for the budget before it fails. */
#define RF_PARSE_WAIT_MS 2000
/* A tree this big, freed, is followed by malloc_trim: its memory goes back to the system. */
#define RF_TRIM_AFTER ((size_t)4 << 20)

/*
 * Bytes jansson would allocate for the tree of text[0..len) (an upper estimate from a scan
 * of its objects, arrays, members and values: ~224 bytes per object, 128 per array, 64 per
 * value or member, and the text). Measured against jansson 2.14: within 15 % for the
 * mockups' answers (an iLO 5 IEL page of 340 kB is a 1.31 MB tree, estimated 1.40 MB; a
 * 13 kB System 50 kB, estimated 57 kB), 1.28 times the 75 bytes per byte of "{},".
 */
size_t rf_json_cost(const char *text, size_t len);

/*
 * Parses text as json_loadb does, taking its estimated cost from the budget first (waiting
 * at most RF_PARSE_WAIT_MS for it): *cost receives what was taken, to give back with
 * rf_json_release once the tree is freed. NULL when the text is malformed (err set) or too
 * costly to parse now (err->text says which, *cost 0).
 */
json_t *rf_json_load(const char *text, size_t len, size_t *cost, json_error_t *err);

/* Gives back what rf_json_load took (call after the tree's json_decref); a large one is
 * followed by malloc_trim. */
void rf_json_release(size_t cost);

/* Estimated bytes held now (tests and the benchmark). */
size_t rf_json_budget_used(void);

#endif
