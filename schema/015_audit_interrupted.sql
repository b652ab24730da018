-- SPDX-License-Identifier: Apache-2.0
-- Audit rows an interrupted kilnd left pending are closed at its next start as
-- 'interrupted: kilnd stopped'; the node's first power reading after that start is added to
-- them. This index finds a node's such rows without reading the whole log.
CREATE INDEX audit_log_interrupted ON audit_log (target)
	WHERE outcome = 'interrupted: kilnd stopped';
