/* SPDX-License-Identifier: Apache-2.0 */
/* A report's health cut: the few facts of an agent report that the health rules read beside
 * the GPU rows, cut out at ingest into a small JSON object kept with the node's agent state
 * (node_agent_state.health_cut), so that a health sweep parses no report. Each cut is made
 * against the previous one, so that a counter's rise between two reports is kept. */
#ifndef KILND_HEALTH_CUT_H
#define KILND_HEALTH_CUT_H

#include <stdint.h>

#include <jansson.h>

#include "health/health.h"

/* The cut of report (parsed) received at now, made against the node's previous cut (its JSON
 * text, or NULL): {"gpu":{...},"host":{...}}. JSON text to free, or NULL when out of memory
 * (the report is stored without one: its rules see nothing this time). */
char *health_cut_make(json_t *report, const char *prev_cut, int64_t now);

/* Fills the facts of the cut (its text, or NULL) into f; *keep receives the parsed cut, which
 * f's strings point into (json_decref it after f is done). */
void health_cut_facts(struct health_facts *f, const char *cut, json_t **keep);

#endif
