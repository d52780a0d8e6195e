// Package topstore is the contract between the terminal view of skewlens
// top (package top) and the storage it reads: the Reader interface, the
// Query it takes and the Snapshot, with its row types, it returns.
//
// The view declares it and storage implements it: the ClickHouse store's
// TopReader is the Reader in production, and top's tests use fakes. It
// lives apart from top so that a store compiles without the view.
//
// It imports only the standard library: nothing of top, of its terminal
// code or of any store.
package topstore
