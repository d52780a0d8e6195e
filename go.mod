module github.com/skewlens/skewlens

go 1.26

require (
	github.com/alecthomas/kong v1.17.0
	github.com/cespare/xxhash/v2 v2.3.0
)
