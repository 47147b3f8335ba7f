// Package jobs is the vocabulary of the durable lease queue: jobs of a
// kind, keyed, leased to one process at a time.
package jobs
