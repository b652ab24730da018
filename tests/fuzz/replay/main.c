/* SPDX-License-Identifier: Apache-2.0 */
/* Runs a libFuzzer harness over files and folders of inputs (a corpus replay): the test build
 * links each harness with this main under any compiler, so that the harnesses keep building
 * and their seeds keep passing. Usage: fuzz_NAME_replay PATH... */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REPLAY_MAX (1u << 20) /* the seeds are small: a bigger file is a mistake */

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rbe");
	uint8_t *buf = NULL;
	size_t n;

	if (!f) {
		perror(path);
		return -1;
	}
	buf = malloc(REPLAY_MAX);
	n = buf ? fread(buf, 1, REPLAY_MAX, f) : 0;
	fclose(f);
	if (!buf || n == REPLAY_MAX) {
		fprintf(stderr, "%s: unreadable or over %u bytes\n", path, REPLAY_MAX);
		free(buf);
		return -1;
	}
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file of dir, in name order (a failure names the input). */
static int run_dir(const char *dir, size_t *count)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL, path[4096];
	size_t n = 0, cap = 0;
	int rc = 0;

	if (!d) {
		perror(dir);
		return -1;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **grown = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof(*names));
			if (!grown) {
				rc = -1;
				break;
			}
			names = grown;
		}
		if (!(names[n] = strdup(e->d_name))) {
			rc = -1;
			break;
		}
		n++;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (rc == 0 && run_file(path) == 0)
			(*count)++;
		else
			rc = -1;
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	size_t count = 0;
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st) < 0) {
			perror(argv[i]);
			return 1;
		}
		if (S_ISDIR(st.st_mode) ? run_dir(argv[i], &count) < 0 : run_file(argv[i]) < 0)
			rc = 1;
		else if (!S_ISDIR(st.st_mode))
			count++;
	}
	printf("%zu inputs replayed\n", count);
	return rc || count == 0;
}
