/* SPDX-License-Identifier: Apache-2.0 */
/* The fleet version audit's facts: each node's versions from its agent report (and their
 * compact form in the store), the CUDA driver table, the audit of the store's nodes. The
 * policy, the checks and the groups: versions_policy.c. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "kiln/noderange.h"
#include "reports/versions_audit.h"

/*
 * The least Linux x86_64 driver each CUDA toolkit release needs, from NVIDIA's CUDA Toolkit
 * Release Notes, table "CUDA Toolkit and Corresponding Driver Versions" (the GA release of
 * each minor version): https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html
 * (archived per release under https://docs.nvidia.com/cuda/archive/). Minor version
 * compatibility can run some programs on older drivers of the same major version; this
 * check uses the full-support minimum, which is what an installed toolkit asks for.
 * Sorted by release.
 */
static const struct {
	const char *cuda;
	const char *driver;
} cuda_min_driver[] = {
	{ "11.0", "450.36.06" }, { "11.1", "455.23" },	  { "11.2", "460.27.03" },
	{ "11.3", "465.19.01" }, { "11.4", "470.42.01" }, { "11.5", "495.29.05" },
	{ "11.6", "510.39.01" }, { "11.7", "515.43.04" }, { "11.8", "520.61.05" },
	{ "12.0", "525.60.13" }, { "12.1", "530.30.02" }, { "12.2", "535.54.03" },
	{ "12.3", "545.23.06" }, { "12.4", "550.54.14" }, { "12.5", "555.42.02" },
	{ "12.6", "560.28.03" }, { "12.8", "570.26" },	  { "12.9", "575.51.03" },
	{ "13.0", "580.65.06" },
};

#define CUDA_TABLE_LEN (sizeof(cuda_min_driver) / sizeof(cuda_min_driver[0]))

static const char *const field_names[VA_FIELD_COUNT] = {
	"driver", "kernel_module", "cuda_driver", "cuda_toolkits", "gpu_model", "vbios",
	"bmc_firmware",
};

const char *vaudit_field_name(enum vaudit_field f)
{
	return (unsigned)f < VA_FIELD_COUNT ? field_names[f] : "?";
}

int vaudit_version_cmp(const char *a, const char *b)
{
	while (*a || *b) {
		if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
			size_t la, lb;

			while (*a == '0' && isdigit((unsigned char)a[1]))
				a++;
			while (*b == '0' && isdigit((unsigned char)b[1]))
				b++;
			for (la = 0; isdigit((unsigned char)a[la]); la++)
				;
			for (lb = 0; isdigit((unsigned char)b[lb]); lb++)
				;
			if (la != lb)
				return la < lb ? -1 : 1;
			{
				int c = strncmp(a, b, la);

				if (c)
					return c < 0 ? -1 : 1;
			}
			a += la;
			b += lb;
			continue;
		}
		if (!*a)
			return -1; /* "12.4" < "12.4.1" */
		if (!*b)
			return 1;
		if (*a != *b)
			return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
		a++;
		b++;
	}
	return 0;
}

void vaudit_major_minor(char *buf, size_t len, const char *v)
{
	size_t n = strcspn(v, ".");

	if (v[n] == '.')
		n += 1 + strcspn(v + n + 1, ".");
	snprintf(buf, len, "%.*s", (int)n, v);
}

const char *vaudit_cuda_min_driver(const char *toolkit)
{
	char mm[32];
	const char *found = NULL;

	if (!toolkit || !isdigit((unsigned char)toolkit[0]))
		return NULL;
	vaudit_major_minor(mm, sizeof(mm), toolkit);
	for (size_t i = 0; i < CUDA_TABLE_LEN; i++)
		if (vaudit_version_cmp(cuda_min_driver[i].cuda, mm) <= 0)
			found = cuda_min_driver[i].driver;
	return found;
}

const char *vaudit_cuda_major_min_driver(const char *cuda)
{
	char major[16];
	size_t len = cuda ? strspn(cuda, "0123456789") : 0;

	if (len == 0 || len >= sizeof(major) - 2)
		return NULL;
	snprintf(major, sizeof(major), "%.*s.0", (int)len, cuda);
	for (size_t i = 0; i < CUDA_TABLE_LEN; i++)
		if (strcmp(cuda_min_driver[i].cuda, major) == 0)
			return cuda_min_driver[i].driver;
	return NULL;
}

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

static int cmp_version_p(const void *a, const void *b)
{
	return vaudit_version_cmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_str_p(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds s to a set of strings (no duplicates). */
static int set_add(char ***v, size_t *n, const char *s)
{
	char **grown;

	for (size_t i = 0; i < *n; i++)
		if (strcmp((*v)[i], s) == 0)
			return 0;
	grown = realloc(*v, (*n + 1) * sizeof(*grown));
	if (!grown)
		return kiln_fail(KILN_ERROR, "out of memory");
	*v = grown;
	if (!(grown[*n] = strdup(s)))
		return kiln_fail(KILN_ERROR, "out of memory");
	(*n)++;
	return 0;
}

/* Joins v with commas; NULL for an empty set (unknown). */
static int set_join(char **out, char **v, size_t n)
{
	size_t len = 1;
	char *s;

	*out = NULL;
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		len += strlen(v[i]) + 1;
	s = malloc(len);
	if (!s)
		return kiln_fail(KILN_ERROR, "out of memory");
	len = 0;
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(v[i]);

		if (i)
			s[len++] = ',';
		memcpy(s + len, v[i], l);
		len += l;
	}
	s[len] = '\0';
	*out = s;
	return 0;
}

static const char *obj_str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static int64_t obj_int(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

static int node_groups_copy(struct vaudit_node *n, char *const *groups, size_t ngroups)
{
	if (ngroups == 0)
		return 0;
	n->groups = calloc(ngroups, sizeof(char *));
	if (!n->groups)
		return kiln_fail(KILN_ERROR, "out of memory");
	for (size_t i = 0; i < ngroups; i++) {
		if (!(n->groups[i] = strdup(groups[i])))
			return kiln_fail(KILN_ERROR, "out of memory");
		n->ngroups = i + 1;
	}
	return 0;
}

int vaudit_node_unreported(struct vaudit_node *out, const char *node)
{
	memset(out, 0, sizeof(*out));
	out->host_memory_bytes = out->gpu_memory_bytes = -1;
	if (!(out->node = strdup(node)))
		return kiln_fail(KILN_ERROR, "out of memory");
	return 0;
}

static void facts_copy(json_t *dst, const json_t *src, const char *key)
{
	json_t *v = json_object_get(src, key);

	if (v)
		json_object_set(dst, key, v);
}

/* Copies the keys (NULL-terminated) that src has into a new object; NULL when out of memory. */
static json_t *facts_pick(const json_t *src, const char *const *keys)
{
	json_t *o = json_object();

	for (; o && *keys; keys++)
		facts_copy(o, src, *keys);
	return o;
}

/* Appends to dst a picked copy of each object of the array src (NULL when not an array). */
static void facts_pick_array(json_t *f, const char *key, const json_t *src,
			     const char *const *keys, const char *only_true)
{
	json_t *arr, *o;
	size_t i;

	if (!json_is_array(src))
		return;
	arr = json_array();
	json_array_foreach(src, i, o) {
		if (only_true && !json_is_true(json_object_get(o, only_true)))
			continue;
		json_array_append_new(arr, facts_pick(o, keys));
	}
	json_object_set_new(f, key, arr);
}

/* Only what vaudit_node_from_report reads, in the report's shape (the fallback of
 * vaudit_facts_extract). */
static char *facts_json(const json_t *report)
{
	static const char *const nv_keys[] = { "driver_version", "kernel_module_version",
					       "cuda_driver_version", "status", NULL };
	static const char *const tk_keys[] = { "version", NULL };
	static const char *const gpu_keys[] = { "name", "vbios_version", "memory_total_bytes",
						NULL };
	static const char *const disk_keys[] = { "name", "rotational", NULL };
	static const char *const host_keys[] = { "memory_total_bytes", NULL };
	static const char *const fw_keys[] = { "env", "framework", "version", "cuda", NULL };
	json_t *f = json_object(), *v;
	char *text = NULL;

	if (!f)
		return NULL;
	if (json_is_object(v = json_object_get(report, "nvidia")))
		json_object_set_new(f, "nvidia", facts_pick(v, nv_keys));
	facts_pick_array(f, "cuda_toolkits", json_object_get(report, "cuda_toolkits"), tk_keys,
			 NULL);
	/* Only rotational disks count. */
	facts_pick_array(f, "disks", json_object_get(report, "disks"), disk_keys, "rotational");
	if (json_is_object(v = json_object_get(report, "host")))
		json_object_set_new(f, "host", facts_pick(v, host_keys));
	facts_pick_array(f, "gpus", json_object_get(report, "gpus"), gpu_keys, NULL);
	facts_pick_array(f, "frameworks", json_object_get(report, "frameworks"), fw_keys, NULL);
	text = json_dumps(f, JSON_COMPACT);
	json_decref(f);
	return text;
}

int vaudit_node_from_report(struct vaudit_node *out, const char *node, const json_t *report,
			    int64_t gpu_count_max, char *const *groups, size_t ngroups)
{
	const json_t *nv = json_object_get(report, "nvidia");
	const json_t *host = json_object_get(report, "host");
	json_t *gpus = json_object_get(report, "gpus"), *tks = json_object_get(report, "cuda_toolkits");
	json_t *disks = json_object_get(report, "disks"), *o;
	char **models = NULL, **vbios = NULL, **rot = NULL;
	size_t nmodels = 0, nvbios = 0, nrot = 0, i;
	struct vaudit_node n;
	int64_t gpu_mem = 0;
	int rc;

	if ((rc = vaudit_node_unreported(&n, node)) < 0)
		return rc;
	n.reported = 1;
	if ((rc = node_groups_copy(&n, groups, ngroups)) < 0)
		goto cleanup;
	rc = KILN_ERROR;
	if ((obj_str(nv, "driver_version") && !(n.field[VA_DRIVER] = strdup(obj_str(nv, "driver_version")))) ||
	    (obj_str(nv, "kernel_module_version") &&
	     !(n.field[VA_MODULE] = strdup(obj_str(nv, "kernel_module_version")))) ||
	    (obj_str(nv, "cuda_driver_version") &&
	     !(n.field[VA_CUDA_DRIVER] = strdup(obj_str(nv, "cuda_driver_version")))) ||
	    (obj_str(nv, "status") && !(n.nvidia_status = strdup(obj_str(nv, "status"))))) {
		kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	json_array_foreach(tks, i, o) {
		const char *v = obj_str(o, "version");

		if (v && (rc = set_add(&n.toolkits, &n.ntoolkits, v)) < 0)
			goto cleanup;
	}
	if (n.ntoolkits > 1)
		qsort(n.toolkits, n.ntoolkits, sizeof(char *), cmp_version_p);
	if ((rc = set_join(&n.field[VA_TOOLKITS], n.toolkits, n.ntoolkits)) < 0)
		goto cleanup;

	n.gpu_count = json_is_array(gpus) ? (int64_t)json_array_size(gpus) : 0;
	json_array_foreach(gpus, i, o) {
		int64_t mem = obj_int(o, "memory_total_bytes");

		if ((obj_str(o, "name") && (rc = set_add(&models, &nmodels, obj_str(o, "name"))) < 0) ||
		    (obj_str(o, "vbios_version") &&
		     (rc = set_add(&vbios, &nvbios, obj_str(o, "vbios_version"))) < 0))
			goto cleanup;
		if (mem < 0 || gpu_mem < 0)
			gpu_mem = -1;
		else
			gpu_mem += mem;
	}
	if (nmodels > 1)
		qsort(models, nmodels, sizeof(char *), cmp_str_p);
	if (nvbios > 1)
		qsort(vbios, nvbios, sizeof(char *), cmp_str_p);
	if ((rc = set_join(&n.field[VA_GPU_MODEL], models, nmodels)) < 0 ||
	    (rc = set_join(&n.field[VA_VBIOS], vbios, nvbios)) < 0)
		goto cleanup;
	n.gpu_memory_bytes = n.gpu_count > 0 ? gpu_mem : -1;
	n.gpu_expected = gpu_count_max > n.gpu_count ? gpu_count_max : n.gpu_count;
	n.host_memory_bytes = obj_int(host, "memory_total_bytes");

	json_array_foreach(disks, i, o) {
		if (json_is_true(json_object_get(o, "rotational")) && obj_str(o, "name") &&
		    (rc = set_add(&rot, &nrot, obj_str(o, "name"))) < 0)
			goto cleanup;
	}
	if ((rc = set_join(&n.rotational_disks, rot, nrot)) < 0)
		goto cleanup;
	json_array_foreach(json_object_get(report, "frameworks"), i, o) {
		if (!obj_str(o, "cuda") || !obj_str(o, "framework"))
			continue;
		if (!n.frameworks && !(n.frameworks = json_array())) {
			rc = kiln_fail(KILN_ERROR, "out of memory");
			goto cleanup;
		}
		json_array_append_new(n.frameworks,
				      json_pack("{s:s?, s:s, s:s?, s:s}", "env", obj_str(o, "env"),
						"framework", obj_str(o, "framework"), "version",
						obj_str(o, "version"), "cuda", obj_str(o, "cuda")));
	}
	rc = 0;
cleanup:
	strv_free(models, nmodels);
	strv_free(vbios, nvbios);
	strv_free(rot, nrot);
	if (rc < 0) {
		vaudit_node_clear(&n);
		return rc;
	}
	*out = n;
	return 0;
}

void vaudit_node_clear(struct vaudit_node *n)
{
	if (!n)
		return;
	free(n->node);
	strv_free(n->groups, n->ngroups);
	for (int f = 0; f < VA_FIELD_COUNT; f++)
		free(n->field[f]);
	free(n->nvidia_status);
	strv_free(n->toolkits, n->ntoolkits);
	free(n->rotational_disks);
	json_decref(n->frameworks);
	memset(n, 0, sizeof(*n));
}

/*
 * The facts as vaudit_node_from_report leaves them, pre-split so that the audit over 10,000
 * nodes parses no JSON: "KF1", then US (0x1f) before each of: driver, module, CUDA driver,
 * NVIDIA status, the toolkits (joined by RS, 0x1e), GPU models, VBIOS versions, GPU count,
 * GPU memory, host memory, rotational disks. A string is "=" + its value, NULL is empty.
 */
#define FACTS_MAGIC "KF1"
#define FACTS_US '\x1f'
#define FACTS_RS '\x1e'
#define FACTS_NFIELDS 11

static int facts_put(char **buf, size_t *len, size_t *cap, const char *v)
{
	size_t l = v ? strlen(v) + 1 : 0;
	char *grown;

	/* RS separates only the toolkits (checked one by one in facts_split). */
	if (v && strchr(v, FACTS_US))
		return -1;
	if (*len + l + 2 > *cap) {
		*cap = (*len + l + 2) * 2;
		if (!(grown = realloc(*buf, *cap)))
			return -1;
		*buf = grown;
	}
	(*buf)[(*len)++] = FACTS_US;
	if (v) {
		(*buf)[(*len)++] = '=';
		memcpy(*buf + *len, v, l - 1);
		*len += l - 1;
	}
	(*buf)[*len] = '\0';
	return 0;
}

static char *facts_split(const struct vaudit_node *n)
{
	char num[3][24], *tk = NULL, *buf = NULL;
	size_t len = 0, cap = 0, tl = 0;
	/* frameworks have no field in the split form: such a node keeps the JSON facts */
	int bad = json_array_size(n->frameworks) > 0;

	for (size_t i = 0; i < n->ntoolkits; i++)
		tl += strlen(n->toolkits[i]) + 1;
	if (n->ntoolkits && !(tk = calloc(1, tl)))
		return NULL;
	for (size_t i = 0, at = 0; i < n->ntoolkits; i++) {
		size_t l = strlen(n->toolkits[i]);

		if (strchr(n->toolkits[i], FACTS_RS) || strchr(n->toolkits[i], FACTS_US))
			bad = 1;
		if (i)
			tk[at++] = FACTS_RS;
		memcpy(tk + at, n->toolkits[i], l);
		at += l;
	}
	snprintf(num[0], sizeof(num[0]), "%lld", (long long)n->gpu_count);
	snprintf(num[1], sizeof(num[1]), "%lld", (long long)n->gpu_memory_bytes);
	snprintf(num[2], sizeof(num[2]), "%lld", (long long)n->host_memory_bytes);
	cap = 256;
	if (!bad && (buf = malloc(cap))) {
		memcpy(buf, FACTS_MAGIC, sizeof(FACTS_MAGIC));
		len = sizeof(FACTS_MAGIC) - 1;
		if (facts_put(&buf, &len, &cap, n->field[VA_DRIVER]) < 0 ||
		    facts_put(&buf, &len, &cap, n->field[VA_MODULE]) < 0 ||
		    facts_put(&buf, &len, &cap, n->field[VA_CUDA_DRIVER]) < 0 ||
		    facts_put(&buf, &len, &cap, n->nvidia_status) < 0 ||
		    facts_put(&buf, &len, &cap, tk) < 0 ||
		    facts_put(&buf, &len, &cap, n->field[VA_GPU_MODEL]) < 0 ||
		    facts_put(&buf, &len, &cap, n->field[VA_VBIOS]) < 0 ||
		    facts_put(&buf, &len, &cap, num[0]) < 0 ||
		    facts_put(&buf, &len, &cap, num[1]) < 0 ||
		    facts_put(&buf, &len, &cap, num[2]) < 0 ||
		    facts_put(&buf, &len, &cap, n->rotational_disks) < 0) {
			free(buf);
			buf = NULL;
		}
	}
	free(tk);
	return buf;
}

char *vaudit_facts_extract(const json_t *report)
{
	struct vaudit_node n;
	char *text = NULL;

	/* Pre-split when every value can be; else the JSON facts. */
	if (vaudit_node_from_report(&n, "", report, 0, NULL, 0) == 0) {
		text = facts_split(&n);
		vaudit_node_clear(&n);
	}
	return text ? text : facts_json(report);
}

static int facts_dup(char **out, const char *v, size_t len)
{
	*out = NULL;
	if (len == 0)
		return 0;
	if (!(*out = strndup(v + 1, len - 1)))
		return kiln_fail(KILN_ERROR, "out of memory");
	return 0;
}

static int64_t facts_int(const char *v, size_t len)
{
	char buf[24], *end;
	long long x;

	if (len < 2 || len - 1 >= sizeof(buf))
		return -1;
	memcpy(buf, v + 1, len - 1);
	buf[len - 1] = '\0';
	x = strtoll(buf, &end, 10);
	return *end ? -1 : (int64_t)x;
}

/* A node from facts as vaudit_facts_extract stores them (either form); facts NULL: reported
 * but nothing known. */
static int node_from_facts(struct vaudit_node *out, const char *node, const char *facts,
			   int64_t gpu_count_max, char *const *groups, size_t ngroups)
{
	const char *v[FACTS_NFIELDS], *p;
	size_t l[FACTS_NFIELDS], nf = 0;
	struct vaudit_node n;
	json_t *report;
	char *tk = NULL;
	int rc;

	if (!facts || strncmp(facts, FACTS_MAGIC "\x1f", sizeof(FACTS_MAGIC)) != 0) {
		report = facts ? json_loads(facts, 0, NULL) : NULL;
		rc = vaudit_node_from_report(out, node, report, gpu_count_max, groups, ngroups);
		json_decref(report);
		return rc;
	}
	for (p = facts + sizeof(FACTS_MAGIC) - 1; *p == FACTS_US && nf < FACTS_NFIELDS; nf++) {
		const char *end = strchr(p + 1, FACTS_US);

		v[nf] = p + 1;
		l[nf] = end ? (size_t)(end - v[nf]) : strlen(v[nf]);
		p = v[nf] + l[nf];
	}
	if (nf != FACTS_NFIELDS || *p)
		return kiln_fail(KILN_EINVAL, "audit: node %s: unreadable stored facts", node);
	if ((rc = vaudit_node_unreported(&n, node)) < 0)
		return rc;
	n.reported = 1;
	if ((rc = node_groups_copy(&n, groups, ngroups)) < 0 ||
	    (rc = facts_dup(&n.field[VA_DRIVER], v[0], l[0])) < 0 ||
	    (rc = facts_dup(&n.field[VA_MODULE], v[1], l[1])) < 0 ||
	    (rc = facts_dup(&n.field[VA_CUDA_DRIVER], v[2], l[2])) < 0 ||
	    (rc = facts_dup(&n.nvidia_status, v[3], l[3])) < 0 ||
	    (rc = facts_dup(&tk, v[4], l[4])) < 0 ||
	    (rc = facts_dup(&n.field[VA_GPU_MODEL], v[5], l[5])) < 0 ||
	    (rc = facts_dup(&n.field[VA_VBIOS], v[6], l[6])) < 0 ||
	    (rc = facts_dup(&n.rotational_disks, v[10], l[10])) < 0)
		goto cleanup;
	for (char *t = tk, *next; t; t = next) {
		next = strchr(t, FACTS_RS);
		if (next)
			*next++ = '\0';
		if ((rc = set_add(&n.toolkits, &n.ntoolkits, t)) < 0)
			goto cleanup;
	}
	if ((rc = set_join(&n.field[VA_TOOLKITS], n.toolkits, n.ntoolkits)) < 0)
		goto cleanup;
	n.gpu_count = facts_int(v[7], l[7]);
	if (n.gpu_count < 0)
		n.gpu_count = 0;
	n.gpu_memory_bytes = facts_int(v[8], l[8]);
	n.host_memory_bytes = facts_int(v[9], l[9]);
	n.gpu_expected = gpu_count_max > n.gpu_count ? gpu_count_max : n.gpu_count;
	rc = 0;
cleanup:
	free(tk);
	if (rc < 0) {
		vaudit_node_clear(&n);
		return rc;
	}
	*out = n;
	return 0;
}

/* --- from the store ------------------------------------------------------------------ */

static int cmp_row(const void *a, const void *b)
{
	const struct agent_audit_row *x = a, *y = b;

	return x->node_id < y->node_id ? -1 : x->node_id > y->node_id;
}

static int cmp_firmware(const void *a, const void *b)
{
	const struct node_firmware *x = a, *y = b;

	return x->node_id < y->node_id ? -1 : x->node_id > y->node_id;
}

int vaudit_store_run(json_t **out, struct store *st, const struct kiln_nodelist *names,
		     const json_t *policy)
{
	struct node **all = NULL;
	size_t nall = 0, n = 0, nrows = 0;
	struct vaudit_node *vn = NULL;
	struct agent_audit_row *rows = NULL;
	struct node_firmware *fw = NULL;
	size_t nfw = 0;
	int rc;

	if ((rc = store_node_list(st, &all, &nall)) < 0)
		return rc;
	/* The BMC firmware comes from the inventory the poller stores (sorted by node id). */
	if ((rc = store_node_firmware_list(st, &fw, &nfw)) < 0)
		goto cleanup;
	/* One query for every node's version facts (a query and a parse of the whole report
	 * per node took over a second for 10,000 nodes). */
	if ((rc = store_agent_audit_rows(st, &rows, &nrows)) < 0)
		goto cleanup;
	if (names) {
		for (size_t i = 0; i < names->count; i++) {
			size_t j;

			for (j = 0; j < nall && strcmp(all[j]->name, names->names[i]) != 0; j++)
				;
			if (j == nall) {
				rc = kiln_fail(KILN_ENOTFOUND, "no node '%.63s'", names->names[i]);
				goto cleanup;
			}
		}
	}
	vn = calloc(nall ? nall : 1, sizeof(*vn));
	if (!vn) {
		rc = kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	for (size_t j = 0; j < nall; j++) {
		const struct node *nd = all[j];
		struct agent_audit_row key = { .node_id = nd->id };
		const struct agent_audit_row *row;
		struct node_firmware fkey = { .node_id = nd->id };
		const struct node_firmware *frow;

		if (names && !kiln_nodelist_contains(names, nd->name))
			continue;
		row = nrows ? bsearch(&key, rows, nrows, sizeof(*rows), cmp_row) : NULL;
		if (!row) {
			rc = vaudit_node_unreported(&vn[n], nd->name);
		} else {
			rc = node_from_facts(&vn[n], nd->name, row->facts, row->gpu_count_max,
					     nd->groups, nd->ngroups);
		}
		if (rc < 0)
			goto cleanup;
		n++;
		frow = nfw ? bsearch(&fkey, fw, nfw, sizeof(*fw), cmp_firmware) : NULL;
		if (frow && !(vn[n - 1].field[VA_BMC_FIRMWARE] = strdup(frow->bmc_firmware))) {
			rc = kiln_fail(KILN_ERROR, "out of memory");
			goto cleanup;
		}
	}
	rc = vaudit_run(out, vn, n, policy);
cleanup:
	for (size_t i = 0; vn && i < n; i++)
		vaudit_node_clear(&vn[i]);
	free(vn);
	agent_audit_row_list_free(rows, nrows);
	node_firmware_list_free(fw, nfw);
	node_list_free(all, nall);
	return rc;
}
