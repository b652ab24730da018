/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the files of the store conformance program share. test_store_conformance.c holds the
 * harness (the transcript, call(), the formatters, the dumps and callbacks), the order of the
 * sections, the backends and main; the sections of the script are in
 * store_conformance_inventory.c (nodes, tokens, BMC sessions, audit, events, agent reports,
 * identity) and store_conformance_operations.c (enrollment, BMC state, jobs, the reads,
 * transactions and conflicts, backup, migration, cluster, node calls).
 *
 * A CALL or OK line writes its expression's text, macros expanded, into the transcript: a name
 * used there (clock_at, status_cb, metrics_cb, metrics_bmc_cb, metrics_report_cb, stop_cb)
 * keeps its spelling and is no macro.
 */
#ifndef KILN_TEST_STORE_CONFORMANCE_H
#define KILN_TEST_STORE_CONFORMANCE_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/noderange.h"
#include "store/store.h"

#define T0 1767225600 /* 2026-01-01T00:00:00Z: the fixed clock's start */

/* The fixed clock the store reads while the script runs (seconds). */
extern int64_t clock_at;

/* One backend's run: its store and its transcript. */
struct run {
	const char *backend;
	struct store *st;
	char *text;
	size_t len, cap;
	size_t lines;
	int unexpected;
	char first_unexpected[2048];
	int frames; /* store_wal_frames_watch writes here after each commit */
	jmp_buf section; /* an unexpected code ends the section (what it read may be unset) */
};

/* What one section leaves for the next. */
struct ids {
	int64_t n1, n2, n3, n4;        /* nodes gpu01 gpu02 gpu03 spare04 */
	int64_t admin, viewer;         /* API tokens */
	int64_t audit_add, audit_off, audit_cycle;
	int64_t enroll_a, enroll_b, pending;
	int64_t image, job;
	int64_t agent_seen; /* when gpu01's agent reported */
};

/* --- the harness (test_store_conformance.c) --------------------------------------- */

void conform_out(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *code_name(int rc);
int conform_call(struct run *r, int want, int rc, const char *src);
const char *conform_str(const char *s);
const char *conform_json(const char *s);
const char *conform_num(double v);
const char *conform_hex(const unsigned char *p, size_t n);
void hash_fill(unsigned char h[32], unsigned char seed);

/* The script's short names: a transcript line; a call's code checked and written; a string
 * quoted, JSON canonical, a number, bytes in hex (each valid for a few lines). */
#define out(...) conform_out(__VA_ARGS__)
#define call(...) conform_call(__VA_ARGS__)
#define S(s) conform_str(s)
#define J(s) conform_json(s)
#define F(v) conform_num(v)
#define H(p, n) conform_hex((p), (n))

#define CALL(want, expr) call(r, (want), (expr), #expr)
#define OK(expr) CALL(0, expr)

void node_dump(struct run *r, const struct node *n);
void nodelist_dump(struct run *r, struct kiln_nodelist *l);
void token_dump(struct run *r, const struct api_token *t);
void audit_dump(struct run *r, struct audit_entry *a, size_t n);
void events_dump(struct run *r, struct event *e, size_t n);
void agent_state_dump(struct run *r, const struct agent_state *s);
void gpu_dump(struct run *r, const struct agent_gpu *g);
void samples_dump(struct run *r, struct agent_sample *s, size_t n);
void identity_dump(struct run *r, const struct agent_identity *a);
void fleet_dump(struct run *r, const struct fleet_state *s);
void image_dump(struct run *r, const struct image *i);
void job_dump(struct run *r, const struct job *j);
int status_cb(void *ud, const struct status_row *s);
int metrics_cb(void *ud, const struct metrics_node *m);
int metrics_bmc_cb(void *ud, const struct metrics_bmc *m);
int metrics_report_cb(void *ud, const struct metrics_report *m);
int stop_cb(void *ud, const struct status_row *s);

/* --- the sections, in the order script() runs them --------------------------------- */

/* store_conformance_inventory.c */
void node_fill(struct node *n, const char *name, char **groups, size_t ngroups);
void event_fill(struct event *e, int64_t node, enum event_severity sev, const char *source,
		const char *kind, const char *msg, const char *dedup, int64_t bmc_time);
void section_nodes(struct run *r, struct ids *id);
void section_tokens(struct run *r, struct ids *id);
void section_agent_tokens(struct run *r, struct ids *id);
void section_bmc_sessions(struct run *r, struct ids *id);
void section_audit(struct run *r, struct ids *id);
void section_events(struct run *r, struct ids *id);
void section_agent(struct run *r, struct ids *id);
void section_identity(struct run *r, struct ids *id);

/* store_conformance_operations.c */
void section_enroll(struct run *r, struct ids *id);
void section_bmc(struct run *r, struct ids *id);
void section_jobs(struct run *r, struct ids *id);
void section_reads(struct run *r, struct ids *id);
void section_backup(struct run *r, struct ids *id);
void section_migrate(struct run *r, struct ids *id);
void section_tx_and_conflicts(struct run *r, struct ids *id);
void section_cluster(struct run *r, struct ids *id);
void section_node_calls(struct run *r, struct ids *id);

#endif
