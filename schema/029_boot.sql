-- SPDX-License-Identifier: Apache-2.0
-- kiln schema 29: a node's boots as the poller sees them. boot_started: when kiln saw a boot
-- begin (kilnd's clock: power seen going on, a power on/cycle/reset kiln sent that went
-- through, or the BMC's BootProgress entering its firmware's states); boot_state: the BMC's
-- BootProgress.LastState as last read (NULL: the BMC does not say); boot_last_s: the BMC's
-- LastBootTimeSeconds, how long its last boot took (0: not said). The hung rule counts a
-- node's silence from when its boot should have ended.
ALTER TABLE node_bmc_state ADD COLUMN boot_started INTEGER NOT NULL DEFAULT 0;
ALTER TABLE node_bmc_state ADD COLUMN boot_state TEXT;
ALTER TABLE node_bmc_state ADD COLUMN boot_last_s INTEGER NOT NULL DEFAULT 0;
-- The kinds of the node's reboot-class health reasons per boot of its agent, this boot's and
-- the one before (JSON, server/health/returned.c): a fault back after a reboot needs
-- hardware inspection.
ALTER TABLE node_bmc_state ADD COLUMN boot_faults TEXT;
