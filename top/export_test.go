package top

// The integration tests (package top_test) draw from the ClickHouse
// store, which imports top for the types of Reader; a test inside
// package top cannot import it. These are the checks they share with the
// unit tests.
var (
	CheckSafe    = checkSafe
	CheckAligned = checkAligned
)
