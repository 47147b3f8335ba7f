//go:build race

package faults

// The race detector keeps shadow memory for every allocation (several times
// the heap), so memory bounds are scaled when it is on.
const memoryScale = 4
