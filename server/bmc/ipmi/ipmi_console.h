/* SPDX-License-Identifier: Apache-2.0 */
/* The serial console inside the IPMI helper process: SOL sessions through libipmiconsole. */
#ifndef KILN_BMC_IPMI_CONSOLE_H
#define KILN_BMC_IPMI_CONSOLE_H

#include <jansson.h>

/*
 * Wire messages (ipmi_wire frames; "cid" is a console id kilnd picks, unique per helper):
 *   kilnd -> helper
 *     {"op":"console_open","cid","node","host","user","password","cipher","privilege",
 *      "wa_console","timeout_ms","steal":0|1,"keepalive":0|1}
 *     {"op":"console_data","cid","data":BASE64}      bytes typed into the console
 *     {"op":"console_close","cid"}
 *   helper -> kilnd
 *     {"console":cid,"event":"open"}                   the SOL session is established
 *     {"console":cid,"event":"data","data":BASE64}     bytes from the serial port
 *     {"console":cid,"event":"closed","rc":N,"error":S} always last, exactly once per open:
 *                                                      rc 0 after console_close, < 0 when
 *                                                      the session failed or the BMC ended it
 * Each session has its own thread in the helper; libipmiconsole's engine (select()-based)
 * runs only here, never in kilnd.
 */

/* Sends one frame to kilnd; serialised by the caller's lock. */
typedef int (*ipmi_console_send_fn)(json_t *msg);

/* Sets the function frames go out through. Call once before the first request. */
void ipmi_console_setup(ipmi_console_send_fn send);

/* Handles msg when its op is console_*: returns 1 (msg is not kept), else 0. */
int ipmi_console_request(json_t *msg);

/* Ends every session (their "closed" frames are sent when the link is still up). */
void ipmi_console_shutdown(void);

#endif
