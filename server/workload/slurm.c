/* SPDX-License-Identifier: Apache-2.0 */
/* Slurm through its commands: scontrol for a node's state and for drain and resume, squeue
 * for the jobs on a node (Debian 12's slurmrestd cannot drain). Each command runs with a
 * timeout and its output capped; it is killed when it takes longer. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kiln/buf.h"
#include "kiln/error.h"
#include "kiln/noderange.h"
#include "workload/slurm.h"

#define SCHED_OUT_MAX (1u << 20)

extern char **environ;

int sched_type_parse(enum sched_type *out, const char *s)
{
	if (!s || strcmp(s, "none") == 0)
		*out = SCHED_NONE;
	else if (strcmp(s, "slurm") == 0)
		*out = SCHED_SLURM;
	else
		return kiln_fail(KILN_EINVAL, "scheduler type must be none or slurm, not '%.40s'", s);
	return 0;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads what is ready on fd into b; 1 at its end, 0 for more, negative past the cap. */
static int drain_fd(int fd, struct kiln_buf *b)
{
	char chunk[4096];
	ssize_t n = read(fd, chunk, sizeof(chunk));

	if (n == 0)
		return 1;
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : 1;
	return kiln_buf_append(b, chunk, (size_t)n) < 0 ? KILN_ETOOBIG : 0;
}

/* The first line of a command's complaint, for the message. */
static const char *first_line(struct kiln_buf *b, char *line, size_t len)
{
	size_t n = 0;

	while (b->data && n < b->len && b->data[n] != '\n' && n + 1 < len)
		n++;
	memcpy(line, b->data ? b->data : "", n);
	line[n] = '\0';
	return line;
}

/*
 * Runs argv (argv[0] looked up in PATH) with stdin from /dev/null, waits at most timeout_ms
 * and puts its stdout in *out (caller frees with kiln_buf_free, also on failure). A command
 * that exits non-zero fails with its first line of stderr in the message.
 */
static int run(struct kiln_buf *out, char *const argv[], int64_t timeout_ms)
{
	struct kiln_buf err;
	posix_spawn_file_actions_t fa;
	int opipe[2] = { -1, -1 }, epipe[2] = { -1, -1 }, status = 0, rc = 0, open_fds = 2;
	int64_t deadline = mono_ms() + timeout_ms;
	pid_t pid;
	char line[300];

	kiln_buf_init(out, SCHED_OUT_MAX);
	kiln_buf_init(&err, 64 * 1024);
	if (pipe2(opipe, O_CLOEXEC) < 0 || pipe2(epipe, O_CLOEXEC) < 0) {
		rc = kiln_fail(KILN_ERROR, "%s: pipe: %s", argv[0], strerror(errno));
		goto cleanup;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, opipe[1], 1);
	posix_spawn_file_actions_adddup2(&fa, epipe[1], 2);
	errno = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(opipe[1]);
	close(epipe[1]);
	opipe[1] = epipe[1] = -1;
	if (errno != 0) {
		rc = kiln_fail(KILN_ERROR, "%s: cannot run it: %s", argv[0], strerror(errno));
		goto cleanup;
	}
	while (open_fds > 0) {
		struct pollfd p[2] = { { opipe[0], POLLIN, 0 }, { epipe[0], POLLIN, 0 } };
		int64_t left = deadline - mono_ms();
		int r;

		if (left <= 0) {
			rc = kiln_fail(KILN_ETIMEOUT, "%s: no answer within %lld ms", argv[0],
				       (long long)timeout_ms);
			break;
		}
		r = poll(p, 2, (int)left);
		if (r < 0 && errno != EINTR) {
			rc = kiln_fail(KILN_ERROR, "%s: poll: %s", argv[0], strerror(errno));
			break;
		}
		for (int i = 0; r > 0 && i < 2; i++) {
			int end;

			if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			end = drain_fd(p[i].fd, i == 0 ? out : &err);
			if (end < 0) {
				rc = kiln_fail(KILN_ETOOBIG, "%s: more than %u bytes of output",
					       argv[0], SCHED_OUT_MAX);
				break;
			}
			if (end) {
				close(i == 0 ? opipe[0] : epipe[0]);
				if (i == 0)
					opipe[0] = -1;
				else
					epipe[0] = -1;
				open_fds--;
			}
		}
		if (rc < 0)
			break;
	}
	if (rc < 0)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (rc == 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
		rc = kiln_fail(KILN_ERROR, "%s: exit %d: %s", argv[0],
			       WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
			       first_line(&err, line, sizeof(line)));
	if (rc == 0 && kiln_buf_append(out, "", 1) == 0)
		out->len--; /* a terminated string for the parsers */
cleanup:
	for (int i = 0; i < 2; i++) {
		if (opipe[i] >= 0)
			close(opipe[i]);
		if (epipe[i] >= 0)
			close(epipe[i]);
	}
	kiln_buf_free(&err);
	return rc;
}

/* Copies the value of " KEY=" in line up to the next space (or the line's end) into buf. */
static int field(char *buf, size_t len, const char *line, const char *key, int to_end)
{
	size_t klen = strlen(key);
	const char *p = line, *end;

	for (;;) {
		p = strstr(p, key);
		if (!p)
			return 0;
		if ((p == line || p[-1] == ' ') && p[klen] == '=')
			break;
		p += klen;
	}
	p += klen + 1;
	end = to_end ? p + strcspn(p, "\n") : p + strcspn(p, " \n");
	snprintf(buf, len, "%.*s", (int)(end - p), p);
	return 1;
}

/* A word of a '+'-joined Slurm state ("DOWN*+DRAIN"), ignoring the '*' of not responding. */
static int state_has(const char *state, const char *word)
{
	size_t wlen = strlen(word);

	for (const char *p = state; *p;) {
		size_t n = strcspn(p, "+");

		if (n >= wlen && strncmp(p, word, wlen) == 0 &&
		    (n == wlen || (n == wlen + 1 && p[wlen] == '*')))
			return 1;
		p += n;
		if (*p == '+')
			p++;
	}
	return 0;
}

int sched_parse_node(struct sched_node *out, const char *text)
{
	out->state[0] = out->reason[0] = '\0';
	if (!field(out->state, sizeof(out->state), text, "State", 0) || !out->state[0])
		return kiln_fail(KILN_EPROTO, "scontrol: no State= in its answer");
	/* Reason= is the line's last field: "kiln: power cycle by alice [root@2026-...]" */
	if (field(out->reason, sizeof(out->reason), text, "Reason", 1)) {
		char *open = strrchr(out->reason, '[');
		size_t n = strlen(out->reason);

		if (open && n > 0 && out->reason[n - 1] == ']' && open > out->reason &&
		    open[-1] == ' ')
			open[-1] = '\0';
		if (strcmp(out->reason, "(null)") == 0 || strcmp(out->reason, "none") == 0)
			out->reason[0] = '\0';
	}
	out->down = state_has(out->state, "DOWN") || state_has(out->state, "FAIL");
	/* Slurm marks a node that does not respond with a '*' after its state */
	out->not_responding = state_has(out->state, "NOT_RESPONDING") ||
			      strchr(out->state, '*') != NULL;
	out->drain = state_has(out->state, "DRAIN") || state_has(out->state, "DRAINING") ||
		     state_has(out->state, "DRAINED");
	return 0;
}

int sched_parse_jobs(struct sched_node *out, const char *text)
{
	out->njobs = out->njobs_all = 0;
	for (const char *p = text; *p;) {
		size_t n = strcspn(p, "\n");
		char line[512], *f[4], *save = line;
		int k;

		snprintf(line, sizeof(line), "%.*s", (int)n, p);
		p += n;
		if (*p == '\n')
			p++;
		if (!line[0])
			continue;
		/* id|state|user|name: the name last, it may hold a '|' */
		for (k = 0; k < 3; k++) {
			f[k] = save;
			save = strchr(save, '|');
			if (!save)
				return kiln_fail(KILN_EPROTO, "squeue: line '%.60s' is not id|state|user|name",
						 line);
			*save++ = '\0';
		}
		f[3] = save;
		out->njobs_all++;
		if (out->njobs == SCHED_JOBS_MAX)
			continue;
		snprintf(out->jobs[out->njobs].id, sizeof(out->jobs[0].id), "%s", f[0]);
		snprintf(out->jobs[out->njobs].state, sizeof(out->jobs[0].state), "%s", f[1]);
		snprintf(out->jobs[out->njobs].user, sizeof(out->jobs[0].user), "%s", f[2]);
		snprintf(out->jobs[out->njobs].name, sizeof(out->jobs[0].name), "%s", f[3]);
		out->njobs++;
	}
	return 0;
}

void sched_node_name(char *out, size_t len, const char *template, const char *name)
{
	size_t off = 0;

	if (!template || !template[0])
		template = "{name}";
	out[0] = '\0';
	for (const char *p = template; *p && off + 1 < len;) {
		const char *part = NULL;
		size_t n = 0;

		if (strncmp(p, "{name}", 6) == 0) {
			part = name;
			n = strlen(name);
			p += 6;
		} else if (strncmp(p, "{short}", 7) == 0) {
			part = name;
			n = strcspn(name, ".");
			p += 7;
		} else {
			part = p++;
			n = 1;
		}
		if (n > len - 1 - off)
			n = len - 1 - off;
		memcpy(out + off, part, n);
		off += n;
		out[off] = '\0';
	}
}

int sched_node_query(const struct sched_config *cfg, struct sched_node *out, const char *kiln_name)
{
	char name[256];
	char *show[] = { (char *)cfg->scontrol, "-o", "show", "node", name, NULL };
	char *jobs[] = { (char *)cfg->squeue, "-h", "-w", name, "-t",
			 "RUNNING,COMPLETING,CONFIGURING,SUSPENDED,STOPPED", "-o", "%i|%T|%u|%j",
			 NULL };
	struct sched_node n = { 0 };
	struct kiln_buf b;
	int rc;

	sched_node_name(name, sizeof(name), cfg->node_name, kiln_name);
	rc = run(&b, show, cfg->timeout_ms);
	if (rc == 0)
		rc = sched_parse_node(&n, b.data ? b.data : "");
	else if (strstr(kiln_error_last(), "not found"))
		rc = kiln_fail(KILN_ENOTFOUND, "slurm: node '%s' not found", name);
	kiln_buf_free(&b);
	if (rc < 0)
		return rc;
	rc = run(&b, jobs, cfg->timeout_ms);
	if (rc == 0)
		rc = sched_parse_jobs(&n, b.data ? b.data : "");
	kiln_buf_free(&b);
	if (rc < 0)
		return rc;
	*out = n;
	return 0;
}

int sched_node_drain(const struct sched_config *cfg, const char *kiln_name, const char *reason)
{
	char node_arg[300], reason_arg[300], name[256];
	char *argv[] = { (char *)cfg->scontrol, "update", node_arg, "State=DRAIN", reason_arg,
			 NULL };
	struct kiln_buf b;
	int rc;

	sched_node_name(name, sizeof(name), cfg->node_name, kiln_name);
	snprintf(node_arg, sizeof(node_arg), "NodeName=%s", name);
	snprintf(reason_arg, sizeof(reason_arg), "Reason=%s", reason);
	rc = run(&b, argv, cfg->timeout_ms);
	kiln_buf_free(&b);
	return rc;
}

int sched_node_resume(const struct sched_config *cfg, const char *kiln_name)
{
	char node_arg[300], name[256];
	char *argv[] = { (char *)cfg->scontrol, "update", node_arg, "State=RESUME", NULL };
	struct kiln_buf b;
	int rc;

	sched_node_name(name, sizeof(name), cfg->node_name, kiln_name);
	snprintf(node_arg, sizeof(node_arg), "NodeName=%s", name);
	rc = run(&b, argv, cfg->timeout_ms);
	kiln_buf_free(&b);
	return rc;
}

void sched_jobs_format(char *buf, size_t len, const struct sched_node *n)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n->njobs && off < len; i++) {
		int w = snprintf(buf + off, len - off, "%sslurm job %s (%s, %s)", i ? ", " : "",
				 n->jobs[i].id, n->jobs[i].user, n->jobs[i].name);

		if (w < 0)
			break;
		off += (size_t)w;
	}
	if (n->njobs_all > n->njobs && off < len)
		snprintf(buf + off, len - off, " and %zu more", n->njobs_all - n->njobs);
}

static int cmp_count(const void *a, const void *b)
{
	return strcmp(((const struct sched_count *)a)->name, ((const struct sched_count *)b)->name);
}

/* Adds a job to name's count in list[0..*n) (unsorted while parsing). */
static int count_add(struct sched_count **list, size_t *n, size_t *cap, const char *name)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp((*list)[i].name, name) == 0) {
			(*list)[i].njobs++;
			return 0;
		}
	if (*n == *cap) {
		size_t grown = *cap ? *cap * 2 : 64;
		struct sched_count *more = realloc(*list, grown * sizeof(*more));

		if (!more)
			return kiln_fail(KILN_ERROR, "out of memory");
		*list = more;
		*cap = grown;
	}
	snprintf((*list)[*n].name, sizeof((*list)[0].name), "%s", name);
	(*list)[(*n)++].njobs = 1;
	return 0;
}

int sched_parse_fleet(struct sched_count **out, size_t *out_count, const char *text)
{
	struct sched_count *list = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;

	for (const char *p = text; *p && rc == 0;) {
		size_t len = strcspn(p, "\n");
		char line[4096], *bar;
		struct kiln_nodelist nodes = { 0 };

		snprintf(line, sizeof(line), "%.*s", (int)len, p);
		p += len;
		if (*p == '\n')
			p++;
		if (!line[0])
			continue;
		if (!(bar = strchr(line, '|'))) {
			rc = kiln_fail(KILN_EPROTO, "squeue: line '%.60s' is not nodes|id", line);
			break;
		}
		*bar = '\0';
		if (!line[0] || strcmp(line, "(null)") == 0)
			continue; /* a pending job holds no node */
		if ((rc = noderange_expand(&nodes, line, NULL, NULL)) < 0) {
			rc = kiln_fail(KILN_EPROTO, "squeue: node list '%.60s': %s", line,
				       kiln_error_last());
			break;
		}
		for (size_t i = 0; i < nodes.count && rc == 0; i++)
			rc = count_add(&list, &n, &cap, nodes.names[i]);
		kiln_nodelist_free(&nodes);
	}
	if (rc < 0) {
		free(list);
		return rc;
	}
	if (n > 1)
		qsort(list, n, sizeof(*list), cmp_count);
	*out = list;
	*out_count = n;
	return 0;
}

int sched_fleet_jobs(const struct sched_config *cfg, struct sched_count **out, size_t *out_count)
{
	char *argv[] = { (char *)cfg->squeue, "-h", "-t",
			 "RUNNING,COMPLETING,CONFIGURING,SUSPENDED,STOPPED", "-o", "%N|%i", NULL };
	struct kiln_buf b;
	int rc = run(&b, argv, cfg->timeout_ms);

	if (rc == 0)
		rc = sched_parse_fleet(out, out_count, b.data ? b.data : "");
	kiln_buf_free(&b);
	return rc;
}
