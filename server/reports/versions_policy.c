/* SPDX-License-Identifier: Apache-2.0 */
/* The fleet version audit's verdicts: the policy (versions wanted per group), the checks over
 * each node, the groups of identical versions (vaudit_run). */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/error.h"
#include "kiln/noderange.h"
#include "reports/versions_audit.h"

static const char *obj_str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
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

					vaudit_major_minor(mm, sizeof(mm), n->toolkits[i]);
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

		json_object_set_new(o, vaudit_field_name(f), v ? json_string(v) : json_null());
		if ((v == NULL) != (m == NULL) || (v && strcmp(v, m) != 0))
			json_array_append_new(differs, json_string(vaudit_field_name(f)));
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
