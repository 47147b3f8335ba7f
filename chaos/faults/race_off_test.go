//go:build !race

package faults

const memoryScale = 1
