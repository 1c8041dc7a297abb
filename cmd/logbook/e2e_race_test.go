//go:build race

package main

// e2eRace: the tests run with -race, so the e2e binary is built with it too.
const e2eRace = true
