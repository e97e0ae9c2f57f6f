//go:build !unix

package app

// descriptorLimit is unknown off Unix: 0, 0.
func descriptorLimit() (soft, hard uint64) { return 0, 0 }

func raiseDescriptorLimit() (soft, hard uint64, err error) { return 0, 0, nil }
