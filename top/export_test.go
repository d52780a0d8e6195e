package top

// The integration tests (package top_test) draw from the ClickHouse
// store, as a user of the package does. These are the checks they share
// with the unit tests.
var (
	CheckSafe    = checkSafe
	CheckAligned = checkAligned
)
