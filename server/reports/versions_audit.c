/* The fleet version audit: groups of identical versions and the checks over each node. */
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

/* "12.4.1" -> "12.4" into buf. */
static void major_minor(char *buf, size_t len, const char *v)
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
	major_minor(mm, sizeof(mm), toolkit);
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

/* --- policy ------------------------------------------------------------------------- */

static const char *const policy_keys[] = { "driver", "module", "cuda", "toolkit",
					    "gpu_model", "vbios", "bmc_firmware", "gpus", NULL };

int vaudit_policy_check(const json_t *policy)
{
	const char *group, *key;
	json_t *rules, *v;

	if (!json_is_object(policy))
		return kiln_fail(KILN_EINVAL, "policy: expected an object of groups");
	json_object_foreach((json_t *)policy, group, rules) {
		if (!json_is_object(rules))
			return kiln_fail(KILN_EINVAL, "policy: group '%.63s': expected an object",
					 group);
		json_object_foreach(rules, key, v) {
			size_t k;

			for (k = 0; policy_keys[k] && strcmp(policy_keys[k], key) != 0; k++)
				;
			if (!policy_keys[k])
				return kiln_fail(KILN_EINVAL,
						 "policy: group '%.63s': unknown key '%.63s' (driver, "
						 "module, cuda, toolkit, gpu_model, vbios, gpus)",
						 group, key);
			if (!json_is_string(v) || json_string_length(v) == 0 ||
			    json_string_length(v) > 512)
				return kiln_fail(KILN_EINVAL,
						 "policy: group '%.63s': %s must be a non-empty text",
						 group, key);
		}
	}
	return 0;
}

/* Does have satisfy want ("A,B" accepted values, or ">=V")? */
static int policy_accepts(const char *want, const char *have)
{
	const char *p = want;

	if (!have)
		return 0;
	if (strncmp(want, ">=", 2) == 0) {
		p += 2;
		while (*p == ' ')
			p++;
		return vaudit_version_cmp(have, p) >= 0;
	}
	while (*p) {
		size_t n = strcspn(p, ",");
		const char *q = p;

		while (n > 0 && *q == ' ') {
			q++;
			n--;
		}
		while (n > 0 && q[n - 1] == ' ')
			n--;
		if (strlen(have) == n && strncmp(q, have, n) == 0)
			return 1;
		p += strcspn(p, ",");
		if (*p == ',')
			p++;
	}
	return 0;
}

static int node_in_group(const struct vaudit_node *n, const char *group)
{
	if (strcmp(group, "all") == 0)
		return 1;
	for (size_t i = 0; i < n->ngroups; i++)
		if (strcmp(n->groups[i], group) == 0)
			return 1;
	return 0;
}

/* --- findings ----------------------------------------------------------------------- */

static int finding_add(json_t *findings, const char *node, const char *check, const char *fmt,
		       ...) __attribute__((format(printf, 4, 5)));

static int finding_add(json_t *findings, const char *node, const char *check, const char *fmt,
		       ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (json_array_append_new(findings, json_pack("{s:s, s:s, s:s}", "node", node, "check",
						       check, "message", msg)) < 0)
		return kiln_fail(KILN_ERROR, "out of memory");
	return 0;
}

/* A finding with its severity (the framework checks). */
static int finding_sev(json_t *findings, const char *node, const char *check, const char *sev,
		       const char *msg)
{
	if (finding_add(findings, node, check, "%s", msg) < 0)
		return KILN_ERROR;
	json_object_set_new(json_array_get(findings, json_array_size(findings) - 1), "severity",
			    json_string(sev));
	return 0;
}

/* The framework checks: each environment's CUDA against the lower of the driver library
 * and the loaded kernel module, and the CUDA majors of the node's environments. */
static int check_frameworks(json_t *findings, const struct vaudit_node *n)
{
	const char *drv = n->field[VA_DRIVER], *mod = n->field[VA_MODULE], *low = drv;
	char majors[64] = "", msg[512];
	size_t i, nmajors = 0;
	json_t *o;

	if (mod && (!low || vaudit_version_cmp(mod, low) < 0))
		low = mod;
	json_array_foreach(n->frameworks, i, o) {
		const char *cuda = obj_str(o, "cuda"), *fw = obj_str(o, "framework");
		const char *ver = obj_str(o, "version"), *env = obj_str(o, "env");
		const char *major_min = vaudit_cuda_major_min_driver(cuda);
		const char *exact = strchr(cuda, '.') ? vaudit_cuda_min_driver(cuda) : NULL;
		char major[8], seen[70], want[12];

		snprintf(major, sizeof(major), "%.*s", (int)strspn(cuda, "0123456789"), cuda);
		snprintf(seen, sizeof(seen), ",%s,", majors);
		snprintf(want, sizeof(want), ",%s,", major);
		if (major[0] && !strstr(seen, want) && nmajors < 4) {
			snprintf(majors + strlen(majors), sizeof(majors) - strlen(majors), "%s%s",
				 nmajors ? "," : "", major);
			nmajors++;
		}
		if (!low)
			continue;
		if (major_min && vaudit_version_cmp(low, major_min) < 0) {
			snprintf(msg, sizeof(msg), "%s %s in %s is built for CUDA %s, which needs "
				 "driver >= %s; the driver is %s: it cannot run", fw, ver ? ver : "?",
				 env ? env : "?", cuda, major_min, low);
			if (finding_sev(findings, n->node, "framework_cuda_unsupported", "critical",
					msg) < 0)
				return KILN_ERROR;
		} else if (exact && vaudit_version_cmp(low, exact) < 0) {
			snprintf(msg, sizeof(msg), "%s %s in %s is built for CUDA %s (driver >= %s); "
				 "driver %s runs it under minor-version compatibility, without PTX JIT",
				 fw, ver ? ver : "?", env ? env : "?", cuda, exact, low);
			if (finding_sev(findings, n->node, "framework_cuda_mvc", "warning", msg) < 0)
				return KILN_ERROR;
		}
	}
	if (nmajors > 1) {
		snprintf(msg, sizeof(msg), "its Python environments need different CUDA majors (%s)",
			 majors);
		if (finding_sev(findings, n->node, "framework_cuda_majors", "warning", msg) < 0)
			return KILN_ERROR;
	}
	return 0;
}

static const char *or_dash(const char *s)
{
	return s ? s : "unknown";
}

static int policy_node(json_t *findings, const struct vaudit_node *n, const json_t *policy)
{
	const char *group, *key;
	json_t *rules, *v;
	int rc;

	json_object_foreach((json_t *)policy, group, rules) {
		if (!node_in_group(n, group))
			continue;
		json_object_foreach(rules, key, v) {
			const char *want = json_string_value(v), *have = NULL;
			char count[32];
			int ok;

			if (strcmp(key, "toolkit") == 0) {
				ok = 0;
				for (size_t i = 0; i < n->ntoolkits && !ok; i++) {
					char mm[32];

					major_minor(mm, sizeof(mm), n->toolkits[i]);
					ok = policy_accepts(want, n->toolkits[i]) ||
					     policy_accepts(want, mm);
				}
				have = n->field[VA_TOOLKITS];
			} else {
				if (strcmp(key, "driver") == 0)
					have = n->field[VA_DRIVER];
				else if (strcmp(key, "module") == 0)
					have = n->field[VA_MODULE];
				else if (strcmp(key, "cuda") == 0)
					have = n->field[VA_CUDA_DRIVER];
				else if (strcmp(key, "gpu_model") == 0)
					have = n->field[VA_GPU_MODEL];
				else if (strcmp(key, "vbios") == 0)
					have = n->field[VA_VBIOS];
				else if (strcmp(key, "bmc_firmware") == 0)
					have = n->field[VA_BMC_FIRMWARE];
				else if (strcmp(key, "gpus") == 0) {
					snprintf(count, sizeof(count), "%lld", (long long)n->gpu_count);
					have = count;
				}
				ok = policy_accepts(want, have);
			}
			if (!ok &&
			    (rc = finding_add(findings, n->node, "policy",
					      "group %s: %s is %s, policy wants %s", group, key,
					      or_dash(have), want)) < 0)
				return rc;
		}
	}
	return 0;
}

static int check_node(json_t *findings, const struct vaudit_node *n, const json_t *policy)
{
	const char *drv = n->field[VA_DRIVER], *mod = n->field[VA_MODULE];
	int rc;

	if ((drv && mod && strcmp(drv, mod) != 0) ||
	    (n->nvidia_status && strcmp(n->nvidia_status, "mismatch") == 0)) {
		if ((rc = finding_add(findings, n->node, "module_mismatch",
				      "kernel module %s differs from driver library %s (reboot "
				      "pending)",
				      or_dash(mod), or_dash(drv))) < 0)
			return rc;
	}
	for (size_t i = 0; drv && i < n->ntoolkits; i++) {
		const char *need = vaudit_cuda_min_driver(n->toolkits[i]);

		if (need && vaudit_version_cmp(drv, need) < 0 &&
		    (rc = finding_add(findings, n->node, "toolkit_too_new",
				      "CUDA toolkit %s needs driver >= %s; the driver is %s",
				      n->toolkits[i], need, drv)) < 0)
			return rc;
	}
	if (n->gpu_count < n->gpu_expected &&
	    (rc = finding_add(findings, n->node, "gpu_missing", "%lld of %lld GPUs seen",
			      (long long)n->gpu_count, (long long)n->gpu_expected)) < 0)
		return rc;
	if (n->host_memory_bytes >= 0 && n->gpu_memory_bytes > 0 &&
	    n->host_memory_bytes / 2 < n->gpu_memory_bytes &&
	    (rc = finding_add(findings, n->node, "host_memory",
			      "host RAM %.0f GiB is under twice the GPU memory %.0f GiB",
			      (double)n->host_memory_bytes / (1 << 30),
			      (double)n->gpu_memory_bytes / (1 << 30))) < 0)
		return rc;
	if (n->rotational_disks &&
	    (rc = finding_add(findings, n->node, "rotational_disk",
			      "rotational data disks: %s", n->rotational_disks)) < 0)
		return rc;
	if ((rc = check_frameworks(findings, n)) < 0)
		return rc;
	if (policy && (rc = policy_node(findings, n, policy)) < 0)
		return rc;
	return 0;
}

/* The fleet by framework version: {"framework","version","cuda","count","nodes":RANGE}. */
static json_t *frameworks_json(const struct vaudit_node *nodes, size_t n)
{
	json_t *by = json_object(), *out = json_array(), *v;
	const char *key;

	for (size_t i = 0; by && i < n; i++) {
		size_t k;
		json_t *o;

		json_array_foreach(nodes[i].frameworks, k, o) {
			char id[256];
			json_t *g;

			snprintf(id, sizeof(id), "%s %s (CUDA %s)", obj_str(o, "framework"),
				 obj_str(o, "version") ? obj_str(o, "version") : "?",
				 obj_str(o, "cuda"));
			if (!(g = json_object_get(by, id))) {
				g = json_pack("{s:s, s:s?, s:s, s:[]}", "framework",
					      obj_str(o, "framework"), "version", obj_str(o, "version"),
					      "cuda", obj_str(o, "cuda"), "names");
				json_object_set_new(by, id, g);
			}
			/* one node once, whatever its environments */
			v = json_array_get(json_object_get(g, "names"),
					   json_array_size(json_object_get(g, "names")) - 1);
			if (!v || strcmp(json_string_value(v), nodes[i].node) != 0)
				json_array_append_new(json_object_get(g, "names"),
						      json_string(nodes[i].node));
		}
	}
	json_object_foreach(by, key, v) {
		json_t *names = json_object_get(v, "names");
		char **list = calloc(json_array_size(names) + 1, sizeof(char *));
		char *range;
		size_t k;
		json_t *s;

		if (!list)
			continue;
		json_array_foreach(names, k, s)
			list[k] = (char *)json_string_value(s);
		range = noderange_compress(list, json_array_size(names));
		free(list);
		json_object_set_new(v, "count", json_integer((json_int_t)json_array_size(names)));
		json_object_set_new(v, "nodes", range ? json_string(range) : json_null());
		free(range);
		json_object_del(v, "names");
		json_array_append(out, v);
	}
	json_decref(by);
	return out;
}

/* --- groups ------------------------------------------------------------------------- */

struct group {
	const struct vaudit_node *first; /* its versions */
	char **names;
	size_t count;
};

static int same_versions(const struct vaudit_node *a, const struct vaudit_node *b)
{
	for (int f = 0; f < VA_FIELD_COUNT; f++) {
		const char *x = a->field[f], *y = b->field[f];

		if ((x == NULL) != (y == NULL) || (x && strcmp(x, y) != 0))
			return 0;
	}
	return 1;
}

static int cmp_group(const void *pa, const void *pb)
{
	const struct group *a = pa, *b = pb;

	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return strcmp(a->first->node, b->first->node);
}

static json_t *group_json(const struct group *g, const struct group *majority)
{
	json_t *o = json_object(), *differs = json_array();
	char *range = noderange_compress(g->names, g->count);

	if (!o || !differs || !range) {
		json_decref(o);
		json_decref(differs);
		free(range);
		return NULL;
	}
	json_object_set_new(o, "nodes", json_string(range));
	json_object_set_new(o, "count", json_integer((json_int_t)g->count));
	json_object_set_new(o, "majority", json_boolean(g == majority));
	for (int f = 0; f < VA_FIELD_COUNT; f++) {
		const char *v = g->first->field[f], *m = majority->first->field[f];

		json_object_set_new(o, field_names[f], v ? json_string(v) : json_null());
		if ((v == NULL) != (m == NULL) || (v && strcmp(v, m) != 0))
			json_array_append_new(differs, json_string(field_names[f]));
	}
	json_object_set_new(o, "differs", differs);
	free(range);
	return o;
}

int vaudit_run(json_t **out, const struct vaudit_node *nodes, size_t n, const json_t *policy)
{
	struct group *groups = NULL;
	size_t ngroups = 0, reported = 0;
	char **unreported = NULL;
	size_t nunreported = 0;
	json_t *res = NULL, *garr = NULL, *findings = NULL;
	int rc = KILN_ERROR;

	groups = calloc(n ? n : 1, sizeof(*groups));
	unreported = calloc(n ? n : 1, sizeof(char *));
	res = json_object();
	garr = json_array();
	findings = json_array();
	if (!groups || !unreported || !res || !garr || !findings) {
		kiln_fail(KILN_ERROR, "out of memory");
		goto cleanup;
	}
	for (size_t i = 0; i < n; i++) {
		const struct vaudit_node *nd = &nodes[i];
		size_t g;

		if (!nd->reported) {
			unreported[nunreported++] = nd->node;
			continue;
		}
		reported++;
		for (g = 0; g < ngroups && !same_versions(groups[g].first, nd); g++)
			;
		if (g == ngroups) {
			groups[g].first = nd;
			groups[g].names = calloc(n, sizeof(char *));
			if (!groups[g].names) {
				kiln_fail(KILN_ERROR, "out of memory");
				goto cleanup;
			}
			ngroups++;
		}
		groups[g].names[groups[g].count++] = nd->node;
		if ((rc = check_node(findings, nd, policy)) < 0)
			goto cleanup;
	}
	if (ngroups > 1)
		qsort(groups, ngroups, sizeof(*groups), cmp_group);
	for (size_t g = 0; g < ngroups; g++) {
		json_t *o = group_json(&groups[g], &groups[0]);

		if (!o || json_array_append_new(garr, o) < 0) {
			kiln_fail(KILN_ERROR, "out of memory");
			rc = KILN_ERROR;
			goto cleanup;
		}
	}
	json_object_set_new(res, "nodes", json_integer((json_int_t)n));
	json_object_set_new(res, "reported", json_integer((json_int_t)reported));
	if (nunreported) {
		char *range = noderange_compress(unreported, nunreported);

		json_object_set_new(res, "unreported", range ? json_string(range) : json_null());
		free(range);
	} else {
		json_object_set_new(res, "unreported", json_null());
	}
	json_object_set_new(res, "deviations", json_integer((json_int_t)json_array_size(findings)));
	json_object_set(res, "groups", garr);
	json_object_set(res, "findings", findings);
	json_object_set_new(res, "frameworks", frameworks_json(nodes, n));
	*out = res;
	res = NULL;
	rc = 0;
cleanup:
	for (size_t g = 0; groups && g < ngroups; g++)
		free(groups[g].names);
	free(groups);
	free(unreported);
	json_decref(res);
	json_decref(garr);
	json_decref(findings);
	return rc;
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
