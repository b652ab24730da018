/* SPDX-License-Identifier: Apache-2.0 */
/* Versions found on disk: NVIDIA kernel module, CUDA toolkits, cuDNN headers, fabric manager. */
#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kiln/error.h"
#include "kiln/parse.h"
#include "rootfs.h"
#include "versions.h"

/* Copies the version-looking token at p (digits and dots) into ver[n]; 0 if one was found. */
static int take_version(char *ver, size_t n, const char *p)
{
	size_t len = 0;

	while (*p == ' ' || *p == '\t')
		p++;
	while (isdigit((unsigned char)p[len]) || p[len] == '.')
		len++;
	if (len == 0 || !isdigit((unsigned char)p[0]) || len >= n)
		return KILN_EINVAL;
	memcpy(ver, p, len);
	ver[len] = '\0';
	return 0;
}

int versions_kernel_module_parse(char *ver, size_t n, int *open_module, const char *text)
{
	const char *p = strstr(text, "NVRM version:");
	const char *km;

	if (!p)
		return kiln_fail(KILN_EINVAL, "no 'NVRM version:' line");
	km = strstr(p, "Kernel Module");
	if (!km || (strchr(p, '\n') && km > strchr(p, '\n')))
		return kiln_fail(KILN_EINVAL, "no 'Kernel Module' in the NVRM line");
	*open_module = km - p >= 5 && strncmp(km - 5, "Open ", 5) == 0;
	p = km + strlen("Kernel Module");
	while (*p == ' ')
		p++;
	if (strncmp(p, "for ", 4) == 0) { /* open module: "for x86_64" */
		p += 4;
		while (*p && *p != ' ')
			p++;
	}
	if (take_version(ver, n, p) < 0)
		return kiln_fail(KILN_EINVAL, "no version after 'Kernel Module'");
	return 0;
}

void versions_kernel_module_collect(json_t *nvidia, const char *root)
{
	char *text = NULL, ver[64];
	int open_module = 0;

	if (rootfs_read(&text, NULL, root, "/proc/driver/nvidia/version", 8192) < 0)
		return;
	if (versions_kernel_module_parse(ver, sizeof ver, &open_module, text) == 0) {
		json_object_set_new(nvidia, "kernel_module_version", json_string(ver));
		json_object_set_new(nvidia, "kernel_module_type",
				    json_string(open_module ? "open" : "proprietary"));
	}
	free(text);
}

int versions_cuda_json_parse(char *ver, size_t n, const char *text)
{
	json_error_t err;
	json_t *root = json_loads(text, 0, &err), *cuda, *v;
	int rc = KILN_EINVAL;

	if (!root)
		return kiln_fail(KILN_EINVAL, "version.json: %s", err.text);
	cuda = json_object_get(root, "cuda");
	v = cuda ? json_object_get(cuda, "version") : NULL;
	if (json_is_string(v) && take_version(ver, n, json_string_value(v)) == 0)
		rc = 0;
	else
		kiln_fail(KILN_EINVAL, "version.json: no cuda.version");
	json_decref(root);
	return rc;
}

int versions_cuda_txt_parse(char *ver, size_t n, const char *text)
{
	const char *p = strstr(text, "CUDA Version");

	if (!p || take_version(ver, n, p + strlen("CUDA Version")) < 0)
		return kiln_fail(KILN_EINVAL, "version.txt: no 'CUDA Version N'");
	return 0;
}

/* Reads "#define NAME value" from header text. */
static int header_define(long *out, const char *text, const char *name)
{
	const char *p = text;
	size_t n = strlen(name);

	while ((p = strstr(p, "#define"))) {
		const char *q = p + 7;

		while (*q == ' ' || *q == '\t')
			q++;
		if (strncmp(q, name, n) == 0 && (q[n] == ' ' || q[n] == '\t')) {
			char *end;
			long v = strtol(q + n, &end, 10);

			if (end != q + n) {
				*out = v;
				return 0;
			}
		}
		p = q;
	}
	return KILN_ENOTFOUND;
}

/* The version of the toolkit at dir (relative to root), from version.json or version.txt. */
static int toolkit_version(char *ver, size_t n, const char *root, const char *dir)
{
	char path[PATH_MAX], *text = NULL;
	int rc;

	snprintf(path, sizeof path, "%s/version.json", dir);
	if (rootfs_read(&text, NULL, root, path, 1 << 20) == 0) {
		rc = versions_cuda_json_parse(ver, n, text);
		free(text);
		if (rc == 0)
			return 0;
	}
	snprintf(path, sizeof path, "%s/version.txt", dir);
	if (rootfs_read(&text, NULL, root, path, 4096) == 0) {
		rc = versions_cuda_txt_parse(ver, n, text);
		free(text);
		if (rc == 0)
			return 0;
	}
	/* toolkits assembled from packages or wheels: include/cuda.h's CUDA_VERSION (12040) */
	snprintf(path, sizeof path, "%s/include/cuda.h", dir);
	if (rootfs_read(&text, NULL, root, path, 1 << 20) == 0) {
		long v;

		rc = header_define(&v, text, "CUDA_VERSION");
		free(text);
		if (rc == 0 && v > 0) {
			snprintf(ver, n, "%ld.%ld", v / 1000, (v % 1000) / 10);
			return 0;
		}
	}
	return KILN_ENOTFOUND;
}

static int cuda_dir_filter(const struct dirent *de)
{
	return strncmp(de->d_name, "cuda-", 5) == 0;
}

int versions_cuda_collect(json_t **out, const char *root)
{
	char dir[PATH_MAX], target[PATH_MAX], rel[PATH_MAX], ver[64];
	struct dirent **names = NULL;
	json_t *arr = json_array(), *def_tk = NULL;
	int n, i, have_target;

	if (!arr)
		return kiln_fail(KILN_ERROR, "out of memory");
	have_target = rootfs_resolve(target, sizeof target, root, "/usr/local/cuda") == 0;
	if (rootfs_path(dir, sizeof dir, root, "/usr/local") < 0)
		n = -1;
	else
		n = scandir(dir, &names, cuda_dir_filter, alphasort);
	for (i = 0; i < n; i++) {
		char resolved[PATH_MAX];
		json_t *tk;

		snprintf(rel, sizeof rel, "/usr/local/%.200s", names[i]->d_name);
		if (rootfs_resolve(resolved, sizeof resolved, root, rel) < 0 ||
		    toolkit_version(ver, sizeof ver, root, resolved) < 0)
			continue;
		tk = json_pack("{s:s,s:s,s:b}", "version", ver, "path", rel, "default",
			       have_target && (strcmp(target, rel) == 0 || strcmp(target, resolved) == 0));
		if (tk && json_is_true(json_object_get(tk, "default")))
			def_tk = tk;
		json_array_append_new(arr, tk);
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	/* /usr/local/cuda as a folder of its own, or a link to somewhere outside cuda-X.Y */
	if (have_target && !def_tk && toolkit_version(ver, sizeof ver, root, target) == 0)
		json_array_append_new(arr, json_pack("{s:s,s:s,s:b}", "version", ver, "path",
						     target, "default", 1));
	*out = arr;
	return 0;
}

int versions_cudnn_parse(char *ver, size_t n, const char *text)
{
	long major, minor, patch = 0;
	int w;

	if (header_define(&major, text, "CUDNN_MAJOR") < 0 ||
	    header_define(&minor, text, "CUDNN_MINOR") < 0)
		return kiln_fail(KILN_EINVAL, "no CUDNN_MAJOR/CUDNN_MINOR defines");
	header_define(&patch, text, "CUDNN_PATCHLEVEL");
	w = snprintf(ver, n, "%ld.%ld.%ld", major, minor, patch);
	if (w < 0 || (size_t)w >= n)
		return kiln_fail(KILN_ETOOBIG, "cudnn version too long");
	return 0;
}

static void cudnn_try(json_t *arr, const char *root, const char *dir)
{
	static const char *const files[] = { "cudnn_version.h", "cudnn.h" };
	char path[PATH_MAX], resolved[PATH_MAX], ver[64], *text = NULL;
	size_t i, k;

	for (i = 0; i < sizeof files / sizeof files[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, files[i]);
		if (rootfs_resolve(resolved, sizeof resolved, root, path) < 0)
			continue;
		for (k = 0; k < json_array_size(arr); k++) {
			const char *seen = json_string_value(
				json_object_get(json_array_get(arr, k), "resolved"));
			if (seen && strcmp(seen, resolved) == 0)
				return; /* the same header through another folder */
		}
		if (rootfs_read(&text, NULL, root, path, 1 << 20) < 0)
			continue;
		if (versions_cudnn_parse(ver, sizeof ver, text) == 0) {
			json_array_append_new(arr, json_pack("{s:s,s:s,s:s}", "version", ver, "path",
							     path, "resolved", resolved));
			free(text);
			return;
		}
		free(text);
		text = NULL;
	}
}

int versions_cudnn_collect(json_t **out, const char *root, json_t *toolkits)
{
	static const char *const dirs[] = { "/usr/include", "/usr/include/x86_64-linux-gnu",
					    "/usr/include/aarch64-linux-gnu", "/usr/local/cuda/include" };
	char dir[PATH_MAX];
	json_t *arr = json_array(), *tk;
	size_t i;

	if (!arr)
		return kiln_fail(KILN_ERROR, "out of memory");
	for (i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
		cudnn_try(arr, root, dirs[i]);
	json_array_foreach(toolkits, i, tk) {
		const char *p = json_string_value(json_object_get(tk, "path"));

		if (p) {
			snprintf(dir, sizeof dir, "%s/include", p);
			cudnn_try(arr, root, dir);
		}
	}
	json_array_foreach(arr, i, tk)
		json_object_del(tk, "resolved");
	*out = arr;
	return 0;
}

void versions_fabric_manager_collect(json_t *nvidia, struct versions_fm_cache *cache, const char *root)
{
	char full[PATH_MAX], line[512], pkg[128] = "";
	struct stat st;
	int installed = 0;
	FILE *f;

	if (rootfs_path(full, sizeof full, root, "/var/lib/dpkg/status") < 0 || stat(full, &st) < 0)
		return;
	if (!cache->valid || cache->mtime != st.st_mtime || cache->size != st.st_size) {
		cache->version[0] = '\0';
		f = fopen(full, "re");
		if (!f)
			return;
		/* stanzas: Package: nvidia-fabricmanager-550 / Status: install ok installed / Version: 550.54.15-1 */
		while (fgets(line, sizeof line, f)) {
			char *v = rootfs_trim(line);

			if (*v == '\0') {
				pkg[0] = '\0';
				installed = 0;
			} else if (strncmp(v, "Package:", 8) == 0) {
				kiln_strlcpy(pkg, rootfs_trim(v + 8), sizeof pkg);
			} else if (strncmp(v, "Status:", 7) == 0) {
				installed = strstr(v, "installed") && !strstr(v, "not-installed") &&
					    !strstr(v, "config-files");
			} else if (strncmp(v, "Version:", 8) == 0 && installed &&
				   strncmp(pkg, "nvidia-fabricmanager", 20) == 0 && !strstr(pkg, "-dev")) {
				char *dash;

				kiln_strlcpy(cache->version, rootfs_trim(v + 8), sizeof cache->version);
				dash = strrchr(cache->version, '-'); /* Debian revision */
				if (dash)
					*dash = '\0';
			}
		}
		fclose(f);
		cache->mtime = st.st_mtime;
		cache->size = st.st_size;
		cache->valid = 1;
	}
	if (cache->version[0])
		json_object_set_new(nvidia, "fabric_manager_version", json_string(cache->version));
}
