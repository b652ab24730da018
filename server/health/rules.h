/* SPDX-License-Identifier: Apache-2.0 */
/* What the rule files of server/health/ share: adding a reason, and each file's rules. Not
 * for use outside the folder (health.h is its interface). */
#ifndef KILND_HEALTH_RULES_H
#define KILND_HEALTH_RULES_H

#include <jansson.h>

#include "health/health.h"

/* Adds a reason of the given level and repair class: the text (cut to fit) ends with the
 * class's mark; the result's level and repair rise to them. */
void health_add(struct health_result *r, enum health_level level, enum health_repair repair,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/*
 * Each topic's part of a report's health cut (health_cut.h): made at ingest from the report
 * and the topic's part of the previous cut (NULL: none), returned new (NULL: nothing to
 * keep); and read back into the facts (cut may be NULL; strings may point into it).
 */
json_t *health_gpu_cut(json_t *report, json_t *prev, int64_t now);
void health_gpu_cut_facts(struct health_facts *f, json_t *cut);
json_t *health_host_cut(json_t *report, json_t *prev, int64_t now);
void health_host_cut_facts(struct health_facts *f, json_t *cut);
/* The parts' facts from the BMC's sensors JSON (parsed; health_sensor_facts calls it). The
 * strings are copied into f: the JSON is freed after. */
void health_parts_sensor_facts(struct health_facts *f, json_t *sensors);

/* Appends ", " (unless first) and the formatted text to buf[len] at *used; bounded. */
void health_part(char *buf, size_t len, size_t *used, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* returned.c: a reboot-class reason whose kind is in f->returned_kinds becomes "... (back
 * after a reboot) [needs hardware inspection]". */
void health_escalate_returned(struct health_result *r, const struct health_facts *f);

/* gpu_rules.c: GPU clocks held down, PCIe and NVLink error counters rising. */
void health_rules_gpu(struct health_result *r, const struct health_facts *f,
		      const struct health_config *cfg);
/* host_rules.c: the kernel's alarms, filesystems filling up. */
void health_rules_host(struct health_result *r, const struct health_facts *f,
		       const struct health_config *cfg);
/* parts_rules.c: every part the BMC rates (fans, PSUs, memory, processors, drives), the
 * BMC's health rollup, the BMC's clock. */
void health_rules_parts(struct health_result *r, const struct health_facts *f,
			const struct health_config *cfg);

#endif
