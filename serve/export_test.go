package serve

// The integration tests (package serve_test) run the Server on the
// ClickHouse store, as a user of the package does. These are the unit
// tests' helpers they share.
var (
	NewTestServer = newStoreServer
	TestPlan      = testPlan
)

// Test tokens and job, for package serve_test.
const (
	AliceToken = aliceToken
	BobToken   = bobToken
	JobID      = jobID
)
