"""Names of the metrics the handlers emit, shared with the dashboards and alarms in `infra/`."""

NAMESPACE = "cronwheel"
TENANT_DIMENSION = "tenant"

FIRED = "Fired"
FIRE_LAG_MS = "FireLagMs"
SUCCEEDED = "Succeeded"
FAILED = "Failed"
RETRIED = "Retried"
DEAD = "Dead"
SKIPPED = "Skipped"
THROTTLED = "ThrottledByLimit"
LEASE_TAKEOVERS = "ShardLeaseTakeovers"
