/* SPDX-License-Identifier: Apache-2.0 */
/* ML frameworks in Python environments, from their files: torch's version.py, TensorFlow's
 * build_info.py, the dist-info folder names of jaxlib, the jax CUDA plugin and NVIDIA's
 * wheels. Bounded: at most FRAMEWORKS_ENVS_MAX environments, a capped read per file. */
#include <ctype.h>
#include <dirent.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frameworks.h"
#include "kiln/error.h"
#include "rootfs.h"

#define PY_FILE_MAX (256 * 1024)

const char *const frameworks_default_paths[] = {
	"/usr/lib/python3/dist-packages",
	"/usr/local/lib/python3*/dist-packages",
	"/usr/local/lib/python3*/site-packages",
	"/opt/conda/lib/python3*/site-packages",
	"/opt/conda/envs/*/lib/python3*/site-packages",
	NULL,
};

/* Copies the string literal at p (after optional spaces) into val[n]. */
static int take_quoted(char *val, size_t n, const char *p)
{
	char q;
	size_t len;

	while (*p == ' ' || *p == '\t')
		p++;
	if (*p != '\'' && *p != '"')
		return KILN_ENOTFOUND;
	q = *p++;
	len = strcspn(p, q == '\'' ? "'\n" : "\"\n");
	if (p[len] != q || len >= n)
		return KILN_ENOTFOUND;
	memcpy(val, p, len);
	val[len] = '\0';
	return 0;
}

int frameworks_py_assign(char *val, size_t n, const char *text, const char *name)
{
	size_t nlen = strlen(name);

	for (const char *line = text; line && *line;) {
		const char *p = line, *next = strchr(line, '\n');

		line = next ? next + 1 : NULL;
		if (strncmp(p, name, nlen) != 0)
			continue;
		p += nlen;
		if (*p == ':') /* an annotation: cuda: Optional[str] = '12.1' */
			p += strcspn(p, "=\n");
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p != '=' || p[1] == '=')
			continue;
		return take_quoted(val, n, p + 1);
	}
	return KILN_ENOTFOUND;
}

int frameworks_py_dict(char *val, size_t n, const char *text, const char *key)
{
	char pat[2][80];

	snprintf(pat[0], sizeof(pat[0]), "'%s'", key);
	snprintf(pat[1], sizeof(pat[1]), "\"%s\"", key);
	for (int i = 0; i < 2; i++) {
		const char *p = strstr(text, pat[i]);

		if (!p)
			continue;
		p += strlen(pat[i]);
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p != ':')
			continue;
		return take_quoted(val, n, p + 1);
	}
	return KILN_ENOTFOUND;
}

static void add(json_t *out, const char *env, const char *framework, const char *version,
		const char *cuda, const char *cudnn)
{
	json_t *o = json_pack("{s:s, s:s, s:s?}", "env", env, "framework", framework, "version",
			      version);

	if (!o)
		return;
	if (cuda && cuda[0])
		json_object_set_new(o, "cuda", json_string(cuda));
	if (cudnn && cudnn[0])
		json_object_set_new(o, "cudnn", json_string(cudnn));
	json_array_append_new(out, o);
}

/* "12.1.105" -> "12.1" */
static void major_minor(char *out, size_t n, const char *v)
{
	size_t len = strspn(v, "0123456789");

	if (v[len] == '.')
		len += 1 + strspn(v + len + 1, "0123456789");
	snprintf(out, n, "%.*s", (int)len, v);
}

/* "nvidia_cudnn_cu12-9.1.0.70.dist-info": name "nvidia_cudnn_cu12", version "9.1.0.70". */
static int dist_info_split(char *name, size_t nn, char *ver, size_t vn, const char *entry)
{
	size_t len = strlen(entry), suffix = strlen(".dist-info");
	const char *dash;

	if (len <= suffix || strcmp(entry + len - suffix, ".dist-info") != 0)
		return -1;
	dash = memchr(entry, '-', len - suffix);
	if (!dash || dash == entry)
		return -1;
	snprintf(name, nn, "%.*s", (int)(dash - entry), entry);
	snprintf(ver, vn, "%.*s", (int)(entry + len - suffix - dash - 1), dash + 1);
	for (char *p = name; *p; p++)
		*p = (char)(*p == '-' || *p == '.' ? '_' : tolower((unsigned char)*p));
	return 0;
}

/* The dist-info versions this module reads, from one listing of the environment. */
struct dists {
	char torch[64], tensorflow[64], jaxlib[64], jax_plugin[64], jax_plugin_cuda[8];
	char cudnn[64], cudnn_cuda[8], runtime[64];
};

static void dists_read(struct dists *d, const char *dir)
{
	DIR *dp = opendir(dir);
	struct dirent *e;
	size_t seen = 0;

	memset(d, 0, sizeof(*d));
	if (!dp)
		return;
	while ((e = readdir(dp)) && seen++ < FRAMEWORKS_DIR_ENTRIES_MAX) {
		char name[128], ver[64];

		if (dist_info_split(name, sizeof(name), ver, sizeof(ver), e->d_name) < 0)
			continue;
		if (strcmp(name, "torch") == 0)
			snprintf(d->torch, sizeof(d->torch), "%s", ver);
		else if (strcmp(name, "tensorflow") == 0 || strcmp(name, "tensorflow_gpu") == 0)
			snprintf(d->tensorflow, sizeof(d->tensorflow), "%s", ver);
		else if (strcmp(name, "jaxlib") == 0)
			snprintf(d->jaxlib, sizeof(d->jaxlib), "%s", ver);
		else if (sscanf(name, "jax_cuda%7[0-9]_plugin", d->jax_plugin_cuda) == 1)
			snprintf(d->jax_plugin, sizeof(d->jax_plugin), "%s", ver);
		else if (sscanf(name, "nvidia_cudnn_cu%7[0-9]", d->cudnn_cuda) == 1)
			snprintf(d->cudnn, sizeof(d->cudnn), "%s", ver);
		else if (strncmp(name, "nvidia_cuda_runtime_cu", 22) == 0)
			snprintf(d->runtime, sizeof(d->runtime), "%s", ver);
	}
	closedir(dp);
}

/* One environment: env is its path as the node sees it, dir the same under root. */
static void env_collect(json_t *out, const char *root, const char *env, const char *dir)
{
	struct dists d;
	char path[4096], *text = NULL, ver[64], cuda[32], cudnn[32];

	dists_read(&d, dir);
	snprintf(path, sizeof(path), "%s/torch/version.py", env);
	if (rootfs_read(&text, NULL, root, path, PY_FILE_MAX) == 0) {
		if (frameworks_py_assign(ver, sizeof(ver), text, "__version__") < 0)
			snprintf(ver, sizeof(ver), "%s", d.torch);
		if (frameworks_py_assign(cuda, sizeof(cuda), text, "cuda") < 0)
			cuda[0] = '\0'; /* cuda = None: a CPU build */
		add(out, env, "torch", ver[0] ? ver : NULL, cuda, NULL);
		free(text);
		text = NULL;
	}
	snprintf(path, sizeof(path), "%s/tensorflow/python/platform/build_info.py", env);
	if (rootfs_read(&text, NULL, root, path, PY_FILE_MAX) == 0) {
		if (frameworks_py_dict(cuda, sizeof(cuda), text, "cuda_version") < 0)
			cuda[0] = '\0';
		if (frameworks_py_dict(cudnn, sizeof(cudnn), text, "cudnn_version") < 0)
			cudnn[0] = '\0';
		add(out, env, "tensorflow", d.tensorflow[0] ? d.tensorflow : NULL, cuda, cudnn);
		free(text);
	}
	if (d.jaxlib[0])
		add(out, env, "jaxlib", d.jaxlib, d.jax_plugin_cuda, NULL);
	if (d.cudnn[0])
		add(out, env, "nvidia-cudnn", d.cudnn, d.cudnn_cuda, NULL);
	if (d.runtime[0]) {
		major_minor(cuda, sizeof(cuda), d.runtime);
		add(out, env, "nvidia-cuda-runtime", d.runtime, cuda, NULL);
	}
}

/* Every folder pattern matches under root, each environment once, at most the bound. */
static void pattern_collect(json_t *out, json_t *seen, const char *root, const char *pattern)
{
	char full[4096];
	glob_t g;
	size_t skip;

	if (rootfs_path(full, sizeof(full), root, pattern) < 0)
		return;
	skip = strlen(full) - strlen(pattern);
	if (glob(full, GLOB_ONLYDIR, NULL, &g) != 0)
		return;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		const char *env = g.gl_pathv[i] + skip;

		size_t k;
		json_t *s;
		int dup = 0;

		if (json_array_size(seen) >= FRAMEWORKS_ENVS_MAX)
			break;
		json_array_foreach(seen, k, s)
			dup |= strcmp(json_string_value(s), env) == 0;
		if (dup)
			continue;
		json_array_append_new(seen, json_string(env));
		env_collect(out, root, env, g.gl_pathv[i]);
	}
	globfree(&g);
}

int frameworks_collect(json_t **out, const char *root, const char *extra)
{
	json_t *arr = json_array(), *seen = json_array();

	if (!arr || !seen) {
		json_decref(arr);
		json_decref(seen);
		return kiln_fail(KILN_ERROR, "out of memory");
	}
	for (size_t i = 0; frameworks_default_paths[i]; i++)
		pattern_collect(arr, seen, root, frameworks_default_paths[i]);
	for (const char *p = extra; p && *p;) {
		size_t len = strcspn(p, ":");
		char one[1024];

		snprintf(one, sizeof(one), "%.*s", (int)len, p);
		if (one[0] == '/')
			pattern_collect(arr, seen, root, one);
		p += len;
		if (*p == ':')
			p++;
	}
	json_decref(seen);
	*out = arr;
	return 0;
}
