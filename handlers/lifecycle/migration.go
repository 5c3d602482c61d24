package lifecycle

import (
	"strings"
	"time"

	"github.com/a-h/templ"
	"github.com/gofiber/fiber/v2"

	"runr.dev/console/handlers"
	"runr.dev/console/ops/domains"
	"runr.dev/console/ops/moves"
	"runr.dev/console/store"
	"runr.dev/console/views"
)

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
	// NoDNS says why a move has no DNS to wait for: it completes by hand or at its deadline.
	NoDNS string `json:"no_dns_to_wait_for,omitempty"`
}

func (h *Handlers) migrationStatus(c *fiber.Ctx, r *store.Region) (MigrationStatus, error) {
	base, err := h.Store.BaseDomain(c.UserContext())
	if err != nil {
		return MigrationStatus{}, err
	}
	ms := MigrationStatus{MigrationStatus: r.MigrationStatus, Detail: r.MigrationDetail.V, DNSCheckAt: r.MigrationDNSCheckAt,
		OldExternalIP: r.OldExternalIP, ExternalIP: r.ExternalIP, DNSInstruction: handlers.DNSInstruction(domains.FunctionDomain(r, base), r.ExternalIP), Steps: []store.JobStep{}}
	if r.MigrationStatus == store.MigrationDNSCheck {
		ms.NoDNS = moves.NoDNSToWaitFor(r)
	}
	if r.MigrationDNSCheckAt != nil {
		d := r.MigrationDNSCheckAt.Add(moves.Deadline)
		ms.Deadline = &d
	}
	if id := r.MigrationDetail.V.JobID; id != "" {
		ms.JobID = id
		if steps, err := h.Store.JobSteps(c.UserContext(), id); err == nil {
			ms.Steps = steps
		}
	}
	return ms, nil
}

// APIMigrate is POST /api/knative-regions/{id}/migrate.
func (h *Handlers) APIMigrate(c *fiber.Ctx) error {
	return handlers.RegionJobAPI(h.Handlers, c, h.Ops.Moves.Start)
}

// APIMigrationStatus is GET /api/knative-regions/{id}/migration-status.
func (h *Handlers) APIMigrationStatus(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(c.UserContext(), c.Params("id"))
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
	r, err := h.Store.RegionByID(c.UserContext(), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	if err := h.Ops.Moves.CompleteByHand(c.UserContext(), h.Actor(c), r); err != nil {
		return h.Fail(c, err)
	}
	return h.RegionAnswer(c, r.ID, nil)
}

// APIRollbackMigration is POST /api/knative-regions/{id}/rollback-migration.
func (h *Handlers) APIRollbackMigration(c *fiber.Ctx) error {
	return handlers.RegionActionAPI(h.Handlers, c, h.Ops.Moves.Rollback)
}

// migrationTab renders the Migration tab.
func (h *Handlers) migrationTab(c *fiber.Ctx, r *store.Region) (templ.Component, error) {
	ms, err := h.migrationStatus(c, r)
	if err != nil {
		return nil, err
	}
	d := migrationData(ms)
	if moved := moves.DataServicesMoved(r); len(moved) > 0 {
		d.DataMoved, d.DataNote = strings.Join(moved, ", "), moves.DataStayedNote
	}
	if r.DomainMigrationStatus == store.MigrationDNSCheck {
		d.Domain = &views.DomainMigrationView{FunctionDomain: r.Settings.V.KnativeDomain, Target: r.DomainMigrationTarget, ExternalIP: r.ExternalIP}
	}
	if d.Job, err = h.TabJob(c, r, "migration", []string{moves.KindMove, moves.KindRollback, domains.KindDomainMigration}); err != nil {
		return nil, err
	}
	return views.MigrationTab(h.Page(c, r.Name, "regions"), handlers.RegionView(r), d), nil
}

// MigrateForm starts a move from the Migration tab (the new kubeconfig uploaded or pasted).
func (h *Handlers) MigrateForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	in := moves.Input{Kubeconfig: kubeconfigFromForm(c), DataLocation: c.FormValue("data_location")}
	_, err = h.Ops.Moves.Start(c.UserContext(), h.Actor(c), r, in)
	return h.FormOutcome(c, r, "migration", map[string]string{"data_location": in.DataLocation}, err, "The move started.")
}

// MigrationActionForm completes or rolls back a move, or completes a domain migration.
func (h *Handlers) MigrationActionForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	switch c.Params("action") {
	case "complete":
		err = h.Ops.Moves.CompleteByHand(c.UserContext(), h.Actor(c), r)
	case "rollback":
		_, err = h.Ops.Moves.Rollback(c.UserContext(), h.Actor(c), r)
	case "complete-domain":
		_, err = h.Ops.Domains.CompleteDomainMigration(c.UserContext(), h.Actor(c), r)
	default:
		return h.Fail(c, store.ErrNotFound)
	}
	return h.FormOutcome(c, r, "migration", nil, err, "")
}

// migrationData is what the Migration tab shows of a region's move.
func migrationData(ms MigrationStatus) views.MigrationData {
	d := views.MigrationData{Status: ms.MigrationStatus.String(), DNSCheck: ms.MigrationStatus == store.MigrationDNSCheck,
		CanRollback: ms.MigrationStatus == store.MigrationDNSCheck || ms.MigrationStatus == store.MigrationFailed,
		CanStart:    !ms.MigrationStatus.Running(), Deadline: ms.Deadline, OldExternalIP: ms.OldExternalIP,
		DNSInstruction: ms.DNSInstruction, NoDNS: ms.NoDNS, Error: ms.Detail.Error}
	for _, st := range ms.Detail.Steps {
		d.Steps = append(d.Steps, views.MigrationStep{Name: st.Name, Status: st.Status, Message: st.Message})
	}
	return d
}
