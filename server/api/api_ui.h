/* SPDX-License-Identifier: Apache-2.0 */
/* The web dashboard's embedded assets (generated at build time by cmake/KilnEmbedUiRun.cmake). */
#ifndef KILND_API_UI_H
#define KILND_API_UI_H

#include <stddef.h>

struct api_ui_asset {
	const char *name;          /* "app.js": served as /ui/app.js ("index.html" also as /) */
	const unsigned char *data; /* len bytes (a NUL follows, not counted) */
	size_t len;
};

extern const struct api_ui_asset api_ui_assets[];
extern const unsigned api_ui_assets_count;

/* The session cookie's name. */
#define API_UI_COOKIE "kiln_session"
/* How long a dashboard session lives from its log-in (a night shift and then some). */
#define API_UI_SESSION_S (12 * 3600)

#endif
