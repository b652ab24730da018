/* SPDX-License-Identifier: Apache-2.0 */
/* kiln's version and the git revision it was built from, the same in every binary. */
#ifndef KILN_VERSION_H
#define KILN_VERSION_H

#include <stdio.h>

extern const char kiln_version[];  /* "0.1.0", the project's version in CMakeLists.txt */
extern const char kiln_revision[]; /* `git describe`, or KILN_REVISION given to cmake, or "unknown" */

/* Prints "NAME VERSION (REVISION)" and a newline: every binary's --version line. */
void kiln_version_print(FILE *f, const char *name);

#endif
