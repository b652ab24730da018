/* SPDX-License-Identifier: Apache-2.0 */
/* The --version line every kiln binary prints (the strings are generated at build time). */
#include "kiln/version.h"

void kiln_version_print(FILE *f, const char *name)
{
	fprintf(f, "%s %s (%s)\n", name, kiln_version, kiln_revision);
}
