/* SPDX-License-Identifier: Apache-2.0 */
/* kiln-ipmidrive: drives the IPMI helper for the ipmi tests and prints the results as JSON. */
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "bmc/ipmi/ipmi.h"
#include "kiln/error.h"
#include "kiln/parse.h"

#define MAX_TARGETS 1024

struct target_line {
	char name[64];
	char host[64];
	int port;
	char password[128];
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	size_t left;
	json_t **results;
	long *done_ms;
} R = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, NULL, NULL};

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int read_line_file(char *out, size_t outlen, const char *path)
{
	FILE *f = fopen(path, "re");

	if (!f || !fgets(out, (int)outlen, f)) {
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	out[strcspn(out, "\r\n")] = '\0';
	return 0;
}

static size_t targets_load(struct target_line *t, const char *path, const char *password)
{
	FILE *f = fopen(path, "re");
	char line[512];
	size_t n = 0;

	if (!f) {
		fprintf(stderr, "kiln-ipmidrive: cannot open %s\n", path);
		exit(2);
	}
	while (n < MAX_TARGETS && fgets(line, sizeof(line), f)) {
		char port[16] = "", pwfile[256] = "";

		if (sscanf(line, "%63s %63s %15s %255s", t[n].name, t[n].host, port, pwfile) < 3)
			continue;
		if (kiln_parse_int(&t[n].port, port, 0, 65535) < 0) {
			fprintf(stderr, "kiln-ipmidrive: %s: bad port '%s'\n", path, port);
			exit(2);
		}
		kiln_strlcpy(t[n].password, password, sizeof(t[n].password));
		if (pwfile[0] && read_line_file(t[n].password, sizeof(t[n].password), pwfile) < 0) {
			fprintf(stderr, "kiln-ipmidrive: cannot read %s\n", pwfile);
			exit(2);
		}
		n++;
	}
	fclose(f);
	return n;
}

/*
 * Reads the targets' password files again (a test changes one between rounds); a target
 * whose password changed gets a new credentials version, as kilnd gives a node.
 */
static void passwords_reload(struct target_line *t, struct bmc_target *targets, size_t n,
			     const char *path, const char *password)
{
	static struct target_line fresh[MAX_TARGETS];
	size_t m = targets_load(fresh, path, password);

	for (size_t i = 0; i < n && i < m; i++) {
		if (strcmp(t[i].password, fresh[i].password) == 0)
			continue;
		kiln_strlcpy(t[i].password, fresh[i].password, sizeof(t[i].password));
		targets[i].credentials_version++;
	}
}

static void on_done(void *ud, const struct bmc_result *res)
{
	size_t i = (size_t)(uintptr_t)ud;
	json_t *o = json_object();

	if (res->rc == 0 && json_is_object(res->data))
		json_object_update(o, res->data);
	if (res->rc < 0) {
		json_object_set_new(o, "error", json_string(res->error));
		json_object_set_new(o, "code", json_string(kiln_error_name(res->rc)));
	}
	pthread_mutex_lock(&R.lock);
	R.results[i] = o;
	R.done_ms[i] = now_ms();
	R.left--;
	pthread_cond_broadcast(&R.cond);
	pthread_mutex_unlock(&R.lock);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: kiln-ipmidrive --state-dir DIR --targets FILE --password-file F [--user U]\n"
		"  [--workarounds LIST] [--cipher N] [--privilege P] [--timeout-ms N]\n"
		"  [--action-timeout-ms N] [--workers N] [--open-fds N] [--rounds N]\n"
		"  [--between CMD] [--kill-helper-ms N] [--since N] [--on-if-off] [--persistent]\n"
		"  [--session-idle-ms N (0: no kept sessions)] [--first OP (round 1's operation)]\n"
		"  [--after-each CMD]\n"
		"  power-status | power on|off|soft|reset|cycle | boot pxe|cd|disk|bios |\n"
		"  sensors | sel | inventory\n"
		"Prints {\"rounds\":[{\"elapsed_ms\",\"results\":[{\"node\",...}]}],...}.\n"
		"--between runs after the first round, --after-each after each round but the last;\n"
		"password files are read again before each round.\n");
	exit(2);
}

static int parse_op(struct bmc_op *op, int argc, char **argv)
{
	static const char *actions[] = {"on", "off", "soft", "reset", "cycle"};
	static const char *boots[] = {"pxe", "cd", "disk", "bios"};

	if (argc < 1)
		return -1;
	if (strcmp(argv[0], "power-status") == 0) {
		op->kind = BMC_OP_POWER_GET;
		return 0;
	}
	if (strcmp(argv[0], "sensors") == 0) {
		op->kind = BMC_OP_SENSORS;
		return 0;
	}
	if (strcmp(argv[0], "sel") == 0) {
		op->kind = BMC_OP_SEL;
		return 0;
	}
	if (strcmp(argv[0], "inventory") == 0) {
		op->kind = BMC_OP_INVENTORY;
		return 0;
	}
	if (argc < 2)
		return -1;
	if (strcmp(argv[0], "power") == 0) {
		op->kind = BMC_OP_POWER_ACTION;
		for (int i = 0; i < 5; i++)
			if (strcmp(argv[1], actions[i]) == 0) {
				op->action = (enum bmc_power_action)i;
				return 0;
			}
	}
	if (strcmp(argv[0], "boot") == 0) {
		op->kind = BMC_OP_BOOT_SET;
		for (int i = 0; i < 4; i++)
			if (strcmp(argv[1], boots[i]) == 0) {
				op->boot = (enum bmc_boot_device)i;
				return 0;
			}
	}
	return -1;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"state-dir", required_argument, NULL, 'd'},
		{"targets", required_argument, NULL, 't'},
		{"password-file", required_argument, NULL, 'p'},
		{"user", required_argument, NULL, 'u'},
		{"workarounds", required_argument, NULL, 'W'},
		{"cipher", required_argument, NULL, 'C'},
		{"privilege", required_argument, NULL, 'L'},
		{"timeout-ms", required_argument, NULL, 'T'},
		{"action-timeout-ms", required_argument, NULL, 'A'},
		{"workers", required_argument, NULL, 'w'},
		{"open-fds", required_argument, NULL, 'F'},
		{"rounds", required_argument, NULL, 'r'},
		{"between", required_argument, NULL, 'b'},
		{"kill-helper-ms", required_argument, NULL, 'K'},
		{"since", required_argument, NULL, 's'},
		{"on-if-off", no_argument, NULL, 'o'},
		{"persistent", no_argument, NULL, 'P'},
		{"session-idle-ms", required_argument, NULL, 'I'},
		{"first", required_argument, NULL, 'f'},
		{"after-each", required_argument, NULL, 'E'},
		{NULL, 0, NULL, 0},
	};
	static struct target_line lines[MAX_TARGETS];
	const char *state_dir = NULL, *targets_path = NULL, *pwfile = NULL, *user = "admin";
	const char *workarounds = NULL, *privilege = "admin", *between = NULL;
	struct ipmi_limits limits = {5000, 60000};
	struct ipmi_helper_config hc = {NULL, 0, 0};
	struct bmc_op op, first_op;
	const char *first = NULL, *after_each = NULL;
	struct bmc_target *targets;
	char password[128] = "";
	int cipher = 3, open_fds = 0, rounds = 1, kill_ms = -1, opt, maxfd = -1;
	int64_t since = 0;
	size_t n;
	json_t *out, *rounds_out;
	int status = 0;

	memset(&op, 0, sizeof(op));
	while ((opt = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
		int64_t v = 0;

		switch (opt) {
		case 'd': state_dir = optarg; break;
		case 't': targets_path = optarg; break;
		case 'p': pwfile = optarg; break;
		case 'u': user = optarg; break;
		case 'W': workarounds = optarg; break;
		case 'L': privilege = optarg; break;
		case 'b': between = optarg; break;
		case 'o': op.on_if_off = 1; break;
		case 'P': op.persistent = 1; break;
		case 'f': first = optarg; break;
		case 'E': after_each = optarg; break;
		case 'C': case 'T': case 'A': case 'w': case 'F': case 'r': case 'K': case 's': case 'I':
			if (kiln_parse_int64(&v, optarg, 0, INT32_MAX) < 0) {
				fprintf(stderr, "kiln-ipmidrive: %s\n", kiln_error_last());
				return 2;
			}
			if (opt == 'C') cipher = (int)v;
			if (opt == 'T') limits.request_timeout_ms = (long)v;
			if (opt == 'A') limits.action_timeout_ms = (long)v;
			if (opt == 'w') hc.workers = (int)v;
			if (opt == 'F') open_fds = (int)v;
			if (opt == 'r') rounds = (int)v;
			if (opt == 'K') kill_ms = (int)v;
			if (opt == 's') since = v;
			if (opt == 'I') hc.session_idle_ms = v > 0 ? (long)v : -1;
			break;
		default:
			usage();
		}
	}
	if (!state_dir || !targets_path || !pwfile || parse_op(&op, argc - optind, argv + optind) < 0)
		usage();
	op.sel_since = since;
	first_op = op;
	if (first && parse_op(&first_op, 1, (char **)&first) < 0)
		usage();
	if (read_line_file(password, sizeof(password), pwfile) < 0) {
		fprintf(stderr, "kiln-ipmidrive: cannot read %s\n", pwfile);
		return 2;
	}
	n = targets_load(lines, targets_path, password);

	/* like kilnd: the helper first, then everything else */
	hc.state_dir = state_dir;
	if (ipmi_helper_start(&hc) < 0) {
		fprintf(stderr, "kiln-ipmidrive: %s\n", kiln_error_last());
		return 1;
	}
	for (int i = 0; i < open_fds; i++) {
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (fd < 0) {
			fprintf(stderr, "kiln-ipmidrive: open #%d: out of descriptors\n", i);
			return 1;
		}
		if (fd > maxfd)
			maxfd = fd;
	}

	targets = calloc(n ? n : 1, sizeof(*targets));
	R.results = calloc(n ? n : 1, sizeof(*R.results));
	R.done_ms = calloc(n ? n : 1, sizeof(*R.done_ms));
	for (size_t i = 0; i < n; i++) {
		targets[i].node_id = (int64_t)i + 1;
		targets[i].node_name = lines[i].name;
		targets[i].protocol = 3;
		targets[i].host = lines[i].host;
		targets[i].port = lines[i].port;
		targets[i].user = user;
		targets[i].password = lines[i].password;
		targets[i].ipmi_cipher = cipher;
		targets[i].ipmi_privilege = privilege;
		targets[i].ipmi_workarounds = workarounds;
		targets[i].credentials_version = 1;
	}

	rounds_out = json_array();
	for (int r = 0; r < rounds; r++) {
		long t0 = now_ms();
		json_t *results = json_array();

		if (r > 0)
			passwords_reload(lines, targets, n, targets_path, password);
		R.left = n;
		for (size_t i = 0; i < n; i++) {
			R.results[i] = NULL;
			if (ipmi_submit(&targets[i], r == 0 ? &first_op : &op, &limits, on_done,
					(void *)(uintptr_t)i) < 0) {
				/* nothing was sent for a bad target: stop before waiting on it */
				fprintf(stderr, "kiln-ipmidrive: %s\n", kiln_error_last());
				json_decref(results);
				json_decref(rounds_out);
				status = 2;
				goto done;
			}
		}
		pthread_mutex_lock(&R.lock);
		if (r == 0 && kill_ms >= 0) {
			/* kill the helper while requests are in flight; they must fail cleanly */
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += (long)kill_ms * 1000000L;
			ts.tv_sec += ts.tv_nsec / 1000000000L;
			ts.tv_nsec %= 1000000000L;
			while (R.left > 0 && pthread_cond_timedwait(&R.cond, &R.lock, &ts) == 0)
				;
			if (R.left > 0 && ipmi_helper_pid() > 0)
				kill(ipmi_helper_pid(), SIGKILL);
		}
		while (R.left > 0)
			pthread_cond_wait(&R.cond, &R.lock);
		pthread_mutex_unlock(&R.lock);
		for (size_t i = 0; i < n; i++) {
			json_t *o = json_pack("{s:s, s:I}", "node", lines[i].name, "elapsed_ms",
					      (json_int_t)(R.done_ms[i] - t0));

			json_object_update(o, R.results[i]);
			json_decref(R.results[i]);
			if (json_object_get(o, "error"))
				status = 3;
			json_array_append_new(results, o);
		}
		json_array_append_new(rounds_out, json_pack("{s:I, s:o}", "elapsed_ms",
							    (json_int_t)(now_ms() - t0), "results", results));
		{
			const char *cmd = r == 0 && between ? between : after_each;

			if (cmd && r < rounds - 1 && system(cmd) != 0)
				fprintf(stderr, "kiln-ipmidrive: --between/--after-each command failed\n");
		}
	}
	out = json_pack("{s:o, s:i, s:b}", "rounds", rounds_out, "max_fd", maxfd,
			"helper_running", ipmi_helper_running());
	{
		char *text = json_dumps(out, JSON_COMPACT);

		puts(text);
		free(text);
	}
	json_decref(out);
done:
	ipmi_helper_stop();
	free(targets);
	free(R.results);
	free(R.done_ms);
	return status;
}
