/* SPDX-License-Identifier: Apache-2.0 */
/* Redfish discovery: from the service root, following links only, to the system, its
 * chassis and manager, and the vendor profile that selects quirks. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bmc/redfish/internal.h"
#include "kiln/error.h"

const char *rf_link(const json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	if (json_is_string(v))
		return json_string_value(v);
	return json_string_value(json_object_get(v, "@odata.id"));
}

/* Paths compare case-insensitively with a trailing slash dropped (iLO mixes both). */
int rf_path_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	while (la > 1 && a[la - 1] == '/')
		la--;
	while (lb > 1 && b[lb - 1] == '/')
		lb--;
	return la == lb && strncasecmp(a, b, la) == 0;
}

void rf_path_key(char *out, size_t n, const char *path)
{
	size_t len = path ? strcspn(path, "#") : 0;

	while (len > 1 && path[len - 1] == '/')
		len--;
	if (len > n - 1)
		len = n - 1;
	for (size_t i = 0; i < len; i++)
		out[i] = (char)tolower((unsigned char)path[i]);
	out[len] = '\0';
}

/* The last segment of a path ("System.Embedded.1" of ".../Systems/System.Embedded.1/"). */
static void path_last(char *out, size_t n, const char *path)
{
	size_t len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		len--;
	size_t start = len;
	while (start > 0 && path[start - 1] != '/')
		start--;
	size_t m = len - start < n - 1 ? len - start : n - 1;
	memcpy(out, path + start, m);
	out[m] = '\0';
}

static void set_str(char **dst, const char *v)
{
	free(*dst);
	*dst = v ? strdup(v) : NULL;
}

static int contains_ci(const char *hay, const char *needle)
{
	return hay && strcasestr(hay, needle) != NULL;
}

/* The vendor from what the service says of itself: the root's Vendor and Oem, the manager's
 * Model, FirmwareVersion, Oem and id. Many iDRAC firmwares name no Vendor and a Model such
 * as "14G Monolithic": their manager is still iDRAC.Embedded.1. */
enum rf_profile rf_profile_detect(const json_t *root, const json_t *manager)
{
	const char *vendor = json_string_value(json_object_get(root, "Vendor"));
	json_t *oem = json_object_get(root, "Oem");
	json_t *moem = json_object_get(manager, "Oem");
	const char *model = json_string_value(json_object_get(manager, "Model"));
	const char *fw = json_string_value(json_object_get(manager, "FirmwareVersion"));
	const char *id = json_string_value(json_object_get(manager, "@odata.id"));

	if (contains_ci(vendor, "Dell") || json_object_get(oem, "Dell") ||
	    json_object_get(moem, "Dell") || contains_ci(model, "iDRAC") ||
	    contains_ci(id, "iDRAC"))
		return RF_DELL;
	if (contains_ci(vendor, "HPE") || json_object_get(oem, "Hpe") ||
	    json_object_get(oem, "Hp") || json_object_get(moem, "Hpe") ||
	    contains_ci(model, "iLO") || contains_ci(fw, "iLO"))
		return RF_HPE;
	if (contains_ci(vendor, "OpenBMC") || json_object_get(oem, "OpenBMC") ||
	    json_object_get(moem, "OpenBmc") || contains_ci(model, "OpenBmc"))
		return RF_OPENBMC;
	return RF_GENERIC;
}

int rf_body_is_error(const json_t *body)
{
	return json_is_object(body) && json_object_size(body) == 1 &&
	       json_is_object(json_object_get(body, "error"));
}

static void chassis_clear(struct redfish_bmc *b)
{
	for (size_t i = 0; i < b->nchassis; i++) {
		struct rf_chassis *c = &b->chassis[i];
		free(c->path);
		free(c->thermal);
		free(c->power);
		free(c->thermal_subsystem);
		free(c->power_subsystem);
		free(c->environment);
		free(c->sensors);
		free(c->pcie_devices);
		free(c->hpe_devices);
		free(c->logs);
	}
	free(b->chassis);
	b->chassis = NULL;
	b->nchassis = 0;
	json_decref(b->chassis_skipped);
	b->chassis_skipped = NULL;
	json_decref(b->chassis_identity);
	b->chassis_identity = NULL;
	json_decref(b->chassis_tried);
	b->chassis_tried = NULL;
	b->chassis_over = 0;
}

/* What a chassis the system links says identifies the machine (its serial, maker, model):
 * kept from the first that states any. */
static void chassis_identity_keep(struct redfish_bmc *b, const json_t *chassis)
{
	static const char *const keys[] = { "SerialNumber", "Manufacturer", "Model", "SKU",
					    "PartNumber" };
	json_t *id;

	if (b->chassis_identity)
		return;
	id = json_object();
	for (size_t i = 0; id && i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *v = json_string_value(json_object_get(chassis, keys[i]));

		if (v && *v)
			json_object_set_new(id, keys[i], json_string(v));
	}
	if (json_object_size(id) > 0)
		b->chassis_identity = id;
	else
		json_decref(id);
}

void rf_bmc_forget_discovery(struct redfish_bmc *b)
{
	if (!b)
		return;
	b->discovered = 0;
	b->discovered_full = 0;
	free(b->managed_by);
	json_decref(b->chassis_links);
	free(b->managers_coll);
	free(b->chassis_coll);
	b->managed_by = b->managers_coll = b->chassis_coll = NULL;
	b->chassis_links = NULL;
	free(b->vendor);
	free(b->sessions);
	free(b->system);
	free(b->manager);
	free(b->reset_target);
	json_decref(b->reset_allowed);
	free(b->reset_info);
	free(b->vmedia_system);
	free(b->vmedia_manager);
	free(b->logs_system);
	free(b->logs_manager);
	free(b->processors);
	free(b->memory);
	json_decref(b->pcie_links);
	free(b->bmc_firmware);
	free(b->bmc_model);
	chassis_clear(b);
	b->vendor = b->sessions = b->system = b->manager = b->reset_target = NULL;
	b->reset_allowed = NULL;
	b->reset_info = b->vmedia_system = b->vmedia_manager = NULL;
	b->logs_system = b->logs_manager = b->processors = b->memory = NULL;
	b->pcie_links = NULL;
	b->bmc_firmware = b->bmc_model = NULL;
	free(b->hgx_system);
	b->hgx_system = NULL;
	free(b->logs_hgx);
	b->logs_hgx = NULL;
	b->logs_hgx_known = 0;
	json_decref(b->log_entries);
	b->log_entries = NULL;
	b->manager_score = 0;
	b->chassis = NULL;
	b->nchassis = 0;
}

/* --- the steps, in the order they run ---------------------------------------------------- */

/* A bound on the chassis one discovery asks for, against a tree without end: a GB300 tray
 * has 42, the largest capture here 47. Reaching it is named in chassis_skipped. */
#define RF_CHASSIS_LIMIT 256

static int chassis_known(const struct redfish_bmc *b, const char *path)
{
	for (size_t i = 0; i < b->nchassis; i++)
		if (b->chassis[i].path && rf_path_equal(b->chassis[i].path, path))
			return 1;
	return 0;
}

/* Marks path asked for; 0 when it was already (or the bound is reached: counted). */
static int chassis_mark(struct redfish_bmc *b, const char *path)
{
	char key[1024];

	rf_path_key(key, sizeof(key), path);
	if (!b->chassis_tried)
		b->chassis_tried = json_object();
	if (json_object_get(b->chassis_tried, key))
		return 0;
	if (json_object_size(b->chassis_tried) >= RF_CHASSIS_LIMIT) {
		b->chassis_over++;
		return 0;
	}
	json_object_set_new(b->chassis_tried, key, json_true());
	return 1;
}

/* GET of a chassis, once per discovery however many links lead to it. */
static void chassis_push(struct rf_op *op, const char *path, rf_handler h)
{
	if (path && chassis_mark(op->bmc, path))
		rf_push(op, "GET", path, NULL, RF_ALLOW_ERROR, h);
}

/* The chassis a link points into: itself, or /redfish/v1/Chassis/Enc of a PoweredBy link to
 * /redfish/v1/Chassis/Enc/Power#/PowerSupplies/0; NULL when it is not under Chassis. */
static char *chassis_of(const char *link)
{
	const char *c = link ? strcasestr(link, "/Chassis/") : NULL;
	if (!c)
		return NULL;
	size_t n = strcspn(link, "#");
	/* past the chassis' own id (a "PowerShelf" is a chassis) */
	const char *id_end = c + strlen("/Chassis/") + strcspn(c + strlen("/Chassis/"), "/#");
	const char *power = strcasestr(id_end, "/Power");
	if (power && (size_t)(power - link) < n)
		n = (size_t)(power - link);
	return strndup(link, n);
}

static int on_chassis_inner(struct rf_op *op, const struct rf_reply *r);
static int on_chassis_outer(struct rf_op *op, const struct rf_reply *r);

enum { FOLLOW_NONE = 0, FOLLOW_IN = 1, FOLLOW_OUT = 2 };

static void follow_key(struct rf_op *op, const json_t *links, const char *key, rf_handler h)
{
	json_t *v = json_object_get(links, key);
	json_t *one = json_is_array(v) ? NULL : v;
	size_t n = json_is_array(v) ? json_array_size(v) : (one ? 1 : 0);
	for (size_t i = 0; i < n; i++) {
		char *path = chassis_of(rf_link(one ? one : json_array_get(v, i), "@odata.id"));
		if (path && !chassis_known(op->bmc, path))
			chassis_push(op, path, h);
		free(path);
	}
}

/* The chassis linked from one of ours: what it contains (a baseboard under a rack-mount
 * chassis), and what contains or powers it (a blade's enclosure, with the PSUs and the
 * inlet sensor). An enclosure reached so is read for itself only: the other blades it
 * contains are other nodes. */
static void chassis_follow(struct rf_op *op, const json_t *chassis, int follow)
{
	json_t *links = json_object_get(chassis, "Links");
	if (follow & FOLLOW_IN)
		follow_key(op, links, "Contains", on_chassis_inner);
	if (follow & FOLLOW_OUT) {
		follow_key(op, links, "ContainedBy", on_chassis_outer);
		follow_key(op, links, "PoweredBy", on_chassis_outer);
	}
}

/* A chassis that does not read is left out and named (inventory shows it): power, boot and
 * media need no chassis, and one dead link must not stop them. */
static int chassis_skip(struct rf_op *op, const struct rf_reply *r, const char *path)
{
	struct redfish_bmc *b = op->bmc;
	if (!b->chassis_skipped)
		b->chassis_skipped = json_array();
	rf_skip_note(b->chassis_skipped, path, r);
	return 0;
}

static int chassis_add(struct rf_op *op, const struct rf_reply *r, int follow)
{
	struct redfish_bmc *b = op->bmc;
	const char *path = rf_link(r->json, "@odata.id");
	if (!path)
		path = r->path;
	/* busy is not dead: the operation fails as busy and a later one reads it */
	if (r->status == 503 || r->status == 429)
		return rf_fail_reply("GET", r->path ? r->path : "chassis", r);
	if (r->status >= 300 || rf_body_is_error(r->json) || !path)
		return chassis_skip(op, r, r->path ? r->path : "chassis");
	if (chassis_known(b, path))
		return 0;
	struct rf_chassis *more = realloc(b->chassis, (b->nchassis + 1) * sizeof(*more));
	if (!more)
		return kiln_fail(KILN_ERROR, "out of memory");
	b->chassis = more;
	struct rf_chassis *c = &b->chassis[b->nchassis++];
	memset(c, 0, sizeof(*c));
	set_str(&c->path, path);
	set_str(&c->thermal, rf_link(r->json, "Thermal"));
	set_str(&c->power, rf_link(r->json, "Power"));
	set_str(&c->thermal_subsystem, rf_link(r->json, "ThermalSubsystem"));
	set_str(&c->power_subsystem, rf_link(r->json, "PowerSubsystem"));
	set_str(&c->environment, rf_link(r->json, "EnvironmentMetrics"));
	set_str(&c->sensors, rf_link(r->json, "Sensors"));
	set_str(&c->pcie_devices, rf_link(r->json, "PCIeDevices"));
	set_str(&c->logs, rf_link(r->json, "LogServices"));
	json_t *hpe = json_object_get(json_object_get(r->json, "Oem"), "Hpe");
	set_str(&c->hpe_devices, rf_link(json_object_get(hpe, "Links"), "Devices"));
	if (follow == (FOLLOW_IN | FOLLOW_OUT))
		chassis_identity_keep(b, r->json); /* one the system links itself */
	chassis_follow(op, r->json, follow);
	return 0;
}

static int on_chassis(struct rf_op *op, const struct rf_reply *r)
{
	return chassis_add(op, r, FOLLOW_IN | FOLLOW_OUT);
}

static int on_chassis_inner(struct rf_op *op, const struct rf_reply *r)
{
	return chassis_add(op, r, FOLLOW_IN);
}

static int on_chassis_outer(struct rf_op *op, const struct rf_reply *r)
{
	return chassis_add(op, r, FOLLOW_NONE);
}

int rf_chassis_claim(const json_t *chassis, const char *system, const char *hgx)
{
	json_t *systems = json_object_get(json_object_get(chassis, "Links"), "ComputerSystems");
	int ours = 0, other = 0;
	size_t i;
	json_t *m;

	json_array_foreach(systems, i, m) {
		const char *p = rf_link(m, "@odata.id");

		if (!p)
			continue;
		if ((system && rf_path_equal(p, system)) || (hgx && rf_path_equal(p, hgx)))
			ours = 1;
		else
			other = 1;
	}
	if (!ours)
		return RF_CLAIM_NO;
	return other ? RF_CLAIM_ALONE : RF_CLAIM_WITH_CONTAINED;
}

/* A member of the Chassis collection that the system's links did not reach: the system's
 * when it names the system (or the host's HGX baseboard) in Links.ComputerSystems. One that
 * does not read is named: it may have been the system's. */
static int on_chassis_claimed(struct rf_op *op, const struct rf_reply *r)
{
	struct redfish_bmc *b = op->bmc;
	int claim;

	if (r->status >= 300 || rf_body_is_error(r->json))
		return chassis_add(op, r, FOLLOW_NONE);
	claim = rf_chassis_claim(r->json, b->system, b->hgx_system);
	if (claim == RF_CLAIM_NO)
		return 0;
	return chassis_add(op, r, claim == RF_CLAIM_WITH_CONTAINED ? FOLLOW_IN : FOLLOW_NONE);
}

static int push_links(struct rf_op *op, const json_t *members, rf_handler h)
{
	size_t i;
	json_t *m;
	json_array_foreach(members, i, m)
		chassis_push(op, rf_link(m, "@odata.id"), h);
	return 0;
}

/* The system links no chassis: every chassis of the BMC is its own. */
static int on_chassis_collection(struct rf_op *op, const struct rf_reply *r)
{
	return push_links(op, json_object_get(r->json, "Members"), on_chassis);
}

/* The system links some: the members not reached yet are asked whose they are. */
static int on_chassis_scan(struct rf_op *op, const struct rf_reply *r)
{
	int ok = rf_reply_usable(r, NULL);

	if (ok <= 0) {
		if (ok == 0)
			chassis_skip(op, r, r->path ? r->path : "chassis");
		return ok;
	}
	return push_links(op, json_object_get(r->json, "Members"), on_chassis_claimed);
}

int rf_manager_score(const json_t *manager, const char *system)
{
	json_t *servers = json_object_get(json_object_get(manager, "Links"), "ManagerForServers");
	const char *type = json_string_value(json_object_get(manager, "ManagerType"));
	int others = 0;
	size_t i;
	json_t *s;

	json_array_foreach(servers, i, s) {
		const char *p = rf_link(s, "@odata.id");

		if (p && system && rf_path_equal(p, system))
			return 3;
		if (p)
			others = 1;
	}
	if (others)
		return 0; /* an HGX baseboard's own BMC */
	return type && strcasecmp(type, "BMC") == 0 ? 2 : 1;
}

/* Takes a manager that fits better than the one taken (score: rf_manager_score, 4 for one
 * the system links): its firmware and model are the BMC's, its logs read with the system's. */
static int manager_take(struct rf_op *op, const struct rf_reply *r, int score)
{
	struct redfish_bmc *b = op->bmc;
	if (b->manager && score <= b->manager_score)
		return 0; /* several linked: the first one is ours */
	b->manager_score = score;
	set_str(&b->manager, rf_link(r->json, "@odata.id"));
	set_str(&b->bmc_firmware, json_string_value(json_object_get(r->json, "FirmwareVersion")));
	set_str(&b->bmc_model, json_string_value(json_object_get(r->json, "Model")));
	set_str(&b->logs_manager, rf_link(r->json, "LogServices"));
	set_str(&b->vmedia_manager, rf_link(r->json, "VirtualMedia"));
	if (b->profile == RF_GENERIC)
		b->profile = rf_profile_detect(NULL, r->json);
	if (b->profile == RF_GENERIC && contains_ci(b->system, "System.Embedded"))
		b->profile = RF_DELL; /* iDRAC's system id, where nothing else names Dell */
	return 0;
}

static int on_manager(struct rf_op *op, const struct rf_reply *r)
{
	return manager_take(op, r, 4);
}

/* A member of the Managers collection (the system names no manager). One that does not read
 * is passed over (another may fit); a busy one fails the operation as busy. */
static int on_manager_candidate(struct rf_op *op, const struct rf_reply *r)
{
	int ok = rf_reply_usable(r, NULL);

	if (ok <= 0)
		return ok;
	return manager_take(op, r, rf_manager_score(r->json, op->bmc->system));
}

/* Every member is read (a Cray EX lists two microcontrollers before its BMC), once per
 * discovery: the one that manages the system, else the BMC, else the first. */
static int on_manager_collection(struct rf_op *op, const struct rf_reply *r)
{
	size_t i;
	json_t *m;

	json_array_foreach(json_object_get(r->json, "Members"), i, m) {
		const char *p = rf_link(m, "@odata.id");

		if (p)
			rf_push(op, "GET", p, NULL, RF_ALLOW_ERROR, on_manager_candidate);
	}
	return 0;
}

static int on_reset_info(struct rf_op *op, const struct rf_reply *r)
{
	json_decref(op->bmc->reset_allowed);
	op->bmc->reset_allowed = rf_reset_allowed_parse(r->json);
	return 0;
}

/* The manager, the chassis and the reset ActionInfo, from the links on_system kept. */
static int discover_push_rest(struct rf_op *op)
{
	struct redfish_bmc *b = op->bmc;
	if (b->reset_info && !b->reset_allowed)
		rf_push(op, "GET", b->reset_info, NULL, 0, on_reset_info);
	if (b->managed_by)
		rf_push(op, "GET", b->managed_by, NULL, 0, on_manager);
	else if (b->managers_coll)
		rf_push(op, "GET", b->managers_coll, NULL, 0, on_manager_collection);
	if (b->chassis_links) {
		push_links(op, b->chassis_links, on_chassis);
		/* then those that name the system though it links them not (a GB200's GPU and
		 * CPU modules, a switch tray's ASICs, an S2600BP's baseboard beside a dead link):
		 * the collection and each member not reached yet, once per discovery */
		if (b->chassis_coll)
			rf_push(op, "GET", b->chassis_coll, NULL, RF_ALLOW_ERROR, on_chassis_scan);
	} else if (b->chassis_coll) {
		rf_push(op, "GET", b->chassis_coll, NULL, 0, on_chassis_collection);
	}
	return 0;
}

static int on_system(struct rf_op *op, const struct rf_reply *r)
{
	struct redfish_bmc *b = op->bmc;
	json_t *sys = r->json;
	json_t *reset = json_object_get(json_object_get(sys, "Actions"), "#ComputerSystem.Reset");

	set_str(&b->system, rf_link(sys, "@odata.id"));
	set_str(&b->reset_target, json_string_value(json_object_get(reset, "target")));
	json_decref(b->reset_allowed);
	b->reset_allowed = rf_reset_allowed_parse(reset);
	set_str(&b->reset_info, json_string_value(json_object_get(reset, "@Redfish.ActionInfo")));
	set_str(&b->vmedia_system, rf_link(sys, "VirtualMedia"));
	set_str(&b->logs_system, rf_link(sys, "LogServices"));
	set_str(&b->processors, rf_link(sys, "Processors"));
	set_str(&b->memory, rf_link(sys, "Memory"));
	json_decref(b->pcie_links);
	b->pcie_links = json_is_array(json_object_get(sys, "PCIeDevices"))
				? json_deep_copy(json_object_get(sys, "PCIeDevices"))
				: NULL;
	if (!b->system)
		return kiln_fail(KILN_EPROTO, "system resource without @odata.id");

	/* the links to the rest, kept so that a discovery for a power read can stop here */
	json_t *links = json_object_get(sys, "Links");
	set_str(&b->managed_by, rf_link(json_array_get(json_object_get(links, "ManagedBy"), 0),
					"@odata.id"));
	json_t *chassis = json_object_get(links, "Chassis");
	json_decref(b->chassis_links);
	b->chassis_links = json_array_size(chassis) > 0 ? json_deep_copy(chassis) : NULL;
	set_str(&b->managers_coll, op->scratch ? rf_link(op->scratch, "Managers") : NULL);
	set_str(&b->chassis_coll, op->scratch ? rf_link(op->scratch, "Chassis") : NULL);

	if (op->discover_full)
		return discover_push_rest(op);
	/* only a power read stops here: this answer is the reading */
	rf_power_read_system(op, sys);
	return 0;
}

/* An NVIDIA HGX GPU baseboard ("HGX_Baseboard_0"): a system of the BMC's that is never a
 * host; its processors are the host's GPUs. */
int rf_system_is_hgx(const char *id)
{
	return id && strncasecmp(id, "HGX_Baseboard", 13) == 0;
}

static int on_systems(struct rf_op *op, const struct rf_reply *r)
{
	struct redfish_bmc *b = op->bmc;
	json_t *members = json_object_get(r->json, "Members");
	size_t n = json_array_size(members), hosts = 0;
	const char *chosen = NULL, *hgx = NULL;
	json_t *chosen_member = NULL;
	struct kiln_buf ids;
	int rc = 0;

	kiln_buf_init(&ids, 256);
	for (size_t i = 0; i < n; i++) {
		const char *p = rf_link(json_array_get(members, i), "@odata.id");
		char last[128];
		if (!p)
			continue;
		path_last(last, sizeof(last), p);
		kiln_buf_printf(&ids, "%s%s", ids.len ? ", " : "", last); /* capped: may stop */
		if (rf_system_is_hgx(last)) {
			/* a host's GPU baseboard: read with the host, never a host itself */
			if (!hgx)
				hgx = p;
			if (b->want_system && strcasecmp(last, b->want_system) == 0) {
				rc = kiln_fail(KILN_ECONFIG, "'%s' is this BMC's GPU baseboard, not "
					       "a host: choose the host system (this BMC has: %s)",
					       last, ids.data);
				goto cleanup;
			}
			continue;
		}
		hosts++;
		if (b->want_system ? strcasecmp(last, b->want_system) == 0 : !chosen) {
			chosen = p;
			chosen_member = json_array_get(members, i);
		}
	}
	set_str(&b->hgx_system, hgx);
	if (b->want_system && !chosen)
		rc = kiln_fail(KILN_ECONFIG, "no system '%s' on this BMC (it has: %s)",
			       b->want_system, ids.len ? ids.data : "none");
	else if (!b->want_system && hosts > 1)
		rc = kiln_fail(KILN_ECONFIG, "this BMC has %zu systems (%s); choose one with "
			       "--bmc-system", hosts, ids.data);
	else if (!chosen)
		rc = kiln_fail(KILN_EPROTO, "the Systems collection is empty");
	else if (json_object_get(chosen_member, "Id"))
		/* expanded ($expand=.): the member is the system resource, as its GET would give */
		rc = on_system(op, &(struct rf_reply){ .status = r->status, .json = chosen_member });
	else
		rf_push(op, "GET", chosen, NULL, 0, on_system);
cleanup:
	kiln_buf_free(&ids);
	return rc;
}

/* Systems with $expand=.: a service that refuses the query (400, 501) gets the plain GET of
 * the collection and of its member, now and from then on. One that answers with the members
 * still as links is followed like the plain collection. */
static int on_systems_expanded(struct rf_op *op, const struct rf_reply *r)
{
	struct redfish_bmc *b = op->bmc;
	const char *systems = rf_link(op->scratch, "Systems");
	if (r->status == 400 || r->status == 501) {
		b->expand_refused = 1;
		rf_push(op, "GET", systems, NULL, 0, on_systems);
		return 0;
	}
	if (r->status >= 300)
		return rf_fail_reply("GET", systems, r);
	return on_systems(op, r);
}

static int on_root(struct rf_op *op, const struct rf_reply *r)
{
	struct redfish_bmc *b = op->bmc;
	json_t *root = r->json;
	const char *systems = rf_link(root, "Systems");

	if (!systems)
		return kiln_fail(KILN_EPROTO, "the service root links no Systems");
	set_str(&b->vendor, json_string_value(json_object_get(root, "Vendor")));
	b->profile = rf_profile_detect(root, NULL);
	json_t *features = json_object_get(root, "ProtocolFeaturesSupported");
	b->select_query = json_is_true(json_object_get(features, "SelectQuery"));
	b->expand_query = json_is_true(json_object_get(json_object_get(features, "ExpandQuery"), "NoLinks"));
	const char *sessions = rf_link(json_object_get(root, "Links"), "Sessions");
	set_str(&b->sessions, sessions);
	if (!sessions)
		b->basic_only = 1;
	json_decref(op->scratch);
	op->scratch = json_incref(root);
	/* one request less at first contact where the service expands its members: the
	 * collection with the system in it */
	if (b->expand_query && !b->expand_refused) {
		char path[1024];
		int n = snprintf(path, sizeof(path), "%s%c$expand=.", systems,
				 strchr(systems, '?') ? '&' : '?');
		if (n > 0 && (size_t)n < sizeof(path)) {
			rf_push(op, "GET", path, NULL, RF_ALLOW_ERROR, on_systems_expanded);
			return 0;
		}
	}
	rf_push(op, "GET", systems, NULL, 0, on_systems);
	return 0;
}

static int discover_done(struct rf_op *op)
{
	struct redfish_bmc *b = op->bmc;
	json_decref(op->scratch);
	op->scratch = NULL;
	if (!b->system)
		return kiln_fail(KILN_EPROTO, "discovery found no system");
	b->discovered = 1;
	if (op->discover_full)
		b->discovered_full = 1;
	if (b->chassis_over > 0) {
		char line[200];

		snprintf(line, sizeof(line), "%zu chassis past the first %d: not read",
			 b->chassis_over, RF_CHASSIS_LIMIT);
		if (!b->chassis_skipped)
			b->chassis_skipped = json_array();
		json_array_append_new(b->chassis_skipped, json_string(line));
		b->chassis_over = 0;
	}
	return op->start(op);
}

int rf_discover_begin(struct rf_op *op)
{
	rf_bmc_forget_discovery(op->bmc);
	rf_push(op, "GET", "/redfish/v1/", NULL, RF_NOAUTH, on_root);
	rf_push_call(op, discover_done);
	return 0;
}

int rf_discover_extend(struct rf_op *op)
{
	struct redfish_bmc *b = op->bmc;
	/* what an earlier pass over the manager and chassis left (none: the first time) */
	chassis_clear(b);
	free(b->manager);
	b->manager = NULL;
	b->manager_score = 0;
	json_decref(b->log_entries); /* which logs are read follows the manager and chassis */
	b->log_entries = NULL;
	discover_push_rest(op);
	rf_push_call(op, discover_done);
	return 0;
}
