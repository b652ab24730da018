-- SPDX-License-Identifier: Apache-2.0
-- Who turned a node off: the actor of the kiln action that explains an on -> off change,
-- '' when no kiln action does (off outside kiln: the BMC's web page, a button, a PDU),
-- NULL while the node was not seen turning off.
ALTER TABLE node_bmc_state ADD COLUMN power_off_by TEXT;
ALTER TABLE node_bmc_state ADD COLUMN power_off_time INTEGER NOT NULL DEFAULT 0;
