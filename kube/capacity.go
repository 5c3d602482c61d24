package kube

import (
	"context"

	"runr.dev/console/store"
)

// AdmitRequest is what a project deploy asks of its region's capacity.
type AdmitRequest struct {
	ProjectID string
	CPUm      int64
	MemoryMi  int64
	AlwaysOn  bool
}

// Admit decides whether a deploy fits the region's budgets; it returns an error that
// gives the numbers when it does not.
func (s *Service) Admit(ctx context.Context, r *store.Region, req AdmitRequest) error {
	return nil
}
