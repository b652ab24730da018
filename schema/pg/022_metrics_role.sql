-- SPDX-License-Identifier: Apache-2.0
-- PostgreSQL's form of schema/022_metrics_role.sql: the role check gains 'metrics'. SQLite
-- cannot alter a CHECK and copies the table; PostgreSQL replaces the constraint in place.
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_role_check;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_role_check
	CHECK (role IN ('viewer', 'operator', 'admin', 'metrics'));
