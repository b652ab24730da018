-- SPDX-License-Identifier: Apache-2.0
-- kiln schema 27: what a BMC says identifies its system, beside its serial (nodes.bmc_serial):
-- the system UUID (lower case), the SKU (Dell's service tag), and the serial of the system's
-- chassis. An agent is bound to its node by these (server/identity.c); enrollment finds a
-- node by them. A value several nodes share identifies none of them and is not compared.
ALTER TABLE nodes ADD COLUMN bmc_uuid TEXT;
ALTER TABLE nodes ADD COLUMN bmc_sku TEXT;
ALTER TABLE nodes ADD COLUMN bmc_chassis_serial TEXT;
CREATE INDEX nodes_by_bmc_uuid ON nodes (bmc_uuid) WHERE bmc_uuid IS NOT NULL;
CREATE INDEX nodes_by_bmc_sku ON nodes (bmc_sku) WHERE bmc_sku IS NOT NULL;
CREATE INDEX nodes_by_bmc_chassis_serial ON nodes (bmc_chassis_serial)
	WHERE bmc_chassis_serial IS NOT NULL;
-- What of the BMC's vouched for the node's last stored report ("system UUID", "SKU (service
-- tag)", ...), shown with the node's agent.
ALTER TABLE agent_identity ADD COLUMN bound_by TEXT;
