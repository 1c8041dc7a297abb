//go:build !race

package main

// e2eRace: the tests run without -race, and so does the e2e binary.
const e2eRace = false
