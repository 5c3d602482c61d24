package handlers

import (
	"errors"
	"time"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"

	"runr.dev/console/ops"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

// MigrateInput is the body of POST /api/knative-regions/{id}/migrate.
type MigrateInput struct {
	Kubeconfig   string `json:"kubeconfig"`
	DataLocation string `json:"data_location"`
}

// refusal splits a ops.Refused into a field error or a message.
func refusal(err error) (FieldErrors, string, error) {
	var rf *ops.Refused
	if errors.As(err, &rf) {
		if rf.Field != "" {
			return FieldErrors{rf.Field: rf.Reason}, "", nil
		}
		return nil, rf.Reason, nil
	}
	return nil, "", err
}

func (h *Handlers) startMigration(c *fiber.Ctx, r *store.Region, in MigrateInput) (*store.Job, FieldErrors, string, error) {
	j, err := h.Kube.StartMigration(ctx(c), r, in.Kubeconfig, in.DataLocation, Who(c).User.Email)
	if err != nil {
		fe, msg, err := refusal(err)
		return nil, fe, msg, err
	}
	return j, nil, "", nil
}

func (h *Handlers) completeMigration(c *fiber.Ctx, r *store.Region) (string, error) {
	_, msg, err := refusal(h.Kube.CompleteMigrationByHand(ctx(c), r, Who(c).User.Email))
	return msg, err
}

func (h *Handlers) rollbackMigration(c *fiber.Ctx, r *store.Region) (*store.Job, string, error) {
	j, err := h.Kube.RollbackMigration(ctx(c), r, Who(c).User.Email)
	if err != nil {
		_, msg, err := refusal(err)
		return nil, msg, err
	}
	return j, "", nil
}

// MigrationStatus is GET /api/knative-regions/{id}/migration-status.
type MigrationStatus struct {
	MigrationStatus store.MigrationStatus `json:"migration_status"`
	JobID           string                `json:"job_id,omitempty"`
	Steps           []store.JobStep       `json:"steps"`
	Detail          store.MigrationDetail `json:"detail"`
	DNSCheckAt      *time.Time            `json:"dns_check_at"`
	Deadline        *time.Time            `json:"deadline"`
	OldExternalIP   string                `json:"old_external_ip"`
	ExternalIP      string                `json:"external_ip"`
	DNSInstruction  string                `json:"dns_instruction"`
}

func (h *Handlers) migrationStatus(c *fiber.Ctx, r *store.Region) (MigrationStatus, error) {
	base, err := h.Store.BaseDomain(ctx(c))
	if err != nil {
		return MigrationStatus{}, err
	}
	ms := MigrationStatus{MigrationStatus: r.MigrationStatus, Detail: r.MigrationDetail.V, DNSCheckAt: r.MigrationDNSCheckAt,
		OldExternalIP: r.OldExternalIP, ExternalIP: r.ExternalIP, DNSInstruction: DNSInstruction(KnativeDomain(r, base), r.ExternalIP), Steps: []store.JobStep{}}
	if r.MigrationDNSCheckAt != nil {
		d := r.MigrationDNSCheckAt.Add(ops.MigrationDeadline)
		ms.Deadline = &d
	}
	if id := r.MigrationDetail.V.JobID; id != "" {
		ms.JobID = id
		if steps, err := h.Store.JobSteps(ctx(c), id); err == nil {
			ms.Steps = steps
		}
	}
	return ms, nil
}

// APIMigrate is POST /api/knative-regions/{id}/migrate.
func (h *Handlers) APIMigrate(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	var in MigrateInput
	if err := bodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	j, fe, msg, err := h.startMigration(c, r, in)
	return h.Accepted(c, j, fe, msg, err)
}

// APIMigrationStatus is GET /api/knative-regions/{id}/migration-status.
func (h *Handlers) APIMigrationStatus(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	ms, err := h.migrationStatus(c, r)
	if err != nil {
		return h.Fail(c, err)
	}
	return c.JSON(ms)
}

// APICompleteMigration is POST /api/knative-regions/{id}/complete-migration.
func (h *Handlers) APICompleteMigration(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	msg, err := h.completeMigration(c, r)
	if err != nil {
		return h.Fail(c, err)
	}
	if msg != "" {
		return Unprocessable(c, msg)
	}
	return h.regionAnswer(c, r.ID, nil)
}

// APIRollbackMigration is POST /api/knative-regions/{id}/rollback-migration.
func (h *Handlers) APIRollbackMigration(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	j, msg, err := h.rollbackMigration(c, r)
	return h.Accepted(c, j, nil, msg, err)
}

// migrationTab renders the Migration tab.
func (h *Handlers) migrationTab(c *fiber.Ctx, r *store.Region) (templ.Component, error) {
	ms, err := h.migrationStatus(c, r)
	if err != nil {
		return nil, err
	}
	d := migrationData(ms)
	if j, err := h.Store.LatestJobOf(ctx(c), r.ID, []string{ops.KindMigrateRegion, ops.KindRollbackMigration}); err == nil {
		jd, err := h.JobData(ctx(c), Who(c), j.ID)
		if err != nil {
			return nil, err
		}
		d.Job = jd.panel()
	}
	return views.MigrationTab(h.page(c, r.Name, "regions"), regionView(r), d), nil
}

// MigrateForm starts a move from the Migration tab (the new kubeconfig uploaded or pasted).
func (h *Handlers) MigrateForm(c *fiber.Ctx) error {
	r, err := h.regionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	in := MigrateInput{Kubeconfig: kubeconfigFromForm(c), DataLocation: c.FormValue("data_location")}
	_, fe, msg, err := h.startMigration(c, r, in)
	if err != nil {
		return h.Fail(c, err)
	}
	if fe != nil || msg != "" {
		return h.formInvalid(c, r, "migration", map[string]string{"data_location": in.DataLocation}, fe, msg)
	}
	return h.formDone(c, r, "migration", "The move started.")
}

// MigrationActionForm completes or rolls back a move.
func (h *Handlers) MigrationActionForm(c *fiber.Ctx) error {
	r, err := h.regionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	msg := ""
	switch c.Params("action") {
	case "complete":
		m, err := h.completeMigration(c, r)
		if err != nil {
			return h.Fail(c, err)
		}
		msg = m
	case "rollback":
		_, m, err := h.rollbackMigration(c, r)
		if err != nil {
			return h.Fail(c, err)
		}
		msg = m
	default:
		return h.Fail(c, store.ErrNotFound)
	}
	if msg != "" {
		return h.formInvalid(c, r, "migration", nil, nil, msg)
	}
	return h.formDone(c, r, "migration", "")
}
