package store

import (
	"context"
	"time"
)

// AdmissionMode is how the region's admission policy treats an image it refuses.
type AdmissionMode string

// Admission modes of a ClusterImagePolicy (spec.mode).
const (
	AdmissionEnforce AdmissionMode = "enforce"
	AdmissionWarn    AdmissionMode = "warn"
)

// SupplyChain is a region's supply chain settings (PUT /api/knative-regions/{id}/supply-chain)
// and the state of its admission policy in the cluster.
type SupplyChain struct {
	// PublicKeys are the cosign public keys (PEM) images must be signed with.
	PublicKeys []string `json:"public_keys,omitempty"`
	// RequireSBOM and RequireScan make the deploy gate ask for an SBOM and a
	// vulnerability scan attestation signed with one of the keys.
	RequireSBOM bool `json:"require_sbom,omitempty"`
	RequireScan bool `json:"require_scan,omitempty"`
	// FailSeverity is the severity at or above which a scan's finding refuses a deploy
	// ("" never refuses for findings).
	FailSeverity string `json:"fail_severity,omitempty"`
	// Admission is the policy the cluster's Sigstore policy-controller enforces.
	Admission Admission `json:"admission"`
	// State is the admission policy's state in the cluster.
	State AdmissionState `json:"state"`
}

// Admission is the region's admission policy: whether it is wanted, its mode and the
// image globs it requires signatures for.
type Admission struct {
	Enabled bool          `json:"enabled,omitempty"`
	Mode    AdmissionMode `json:"mode,omitempty"`
	Images  []string      `json:"images,omitempty"`
}

// AdmissionState is the admission policy's install state in the cluster.
type AdmissionState struct {
	Status  ComponentStatus `json:"status,omitempty"`
	Message string          `json:"message,omitempty"`
	// Adopted is set when the cluster's policy-controller is not the console's release
	// (the console uses it and never removes it).
	Adopted   bool      `json:"adopted,omitempty"`
	UpdatedAt time.Time `json:"updated_at,omitempty"`
}

// Current is the policy's status, not_installed when it has none yet.
func (a AdmissionState) Current() ComponentStatus {
	return a.Status.orNotInstalled()
}

// GateOn reports whether the deploy gate checks images on the region: it has keys.
func (s SupplyChain) GateOn() bool { return len(s.PublicKeys) > 0 }

// SetSupplyChain records a region's supply chain settings and its data location in one
// change; the admission policy's state stays as it is.
func (s *Store) SetSupplyChain(ctx context.Context, id string, v SupplyChain, dataLocation string) error {
	_, err := s.db(ctx).ExecContext(ctx, `UPDATE regions SET supply_chain = jsonb_set($2::jsonb, '{state}', COALESCE(supply_chain->'state', '{}'::jsonb)),
		data_location = $3, updated_at = now() WHERE id = $1`, id, JSON[SupplyChain]{V: v}, dataLocation)
	if err != nil {
		return wrap("set supply chain", err)
	}
	return s.NotifyRegion(ctx, id)
}

// SetAdmissionWanted records whether the region wants its admission policy (the other
// settings stay).
func (s *Store) SetAdmissionWanted(ctx context.Context, id string, enabled bool) error {
	_, err := s.db(ctx).ExecContext(ctx, `UPDATE regions SET supply_chain = jsonb_set(supply_chain, '{admission,enabled}', to_jsonb($2::boolean)),
		updated_at = now() WHERE id = $1`, id, enabled)
	if err != nil {
		return wrap("set admission wanted", err)
	}
	return s.NotifyRegion(ctx, id)
}

// SetAdmissionState records the admission policy's state in the cluster.
func (s *Store) SetAdmissionState(ctx context.Context, id string, st AdmissionState) error {
	st.UpdatedAt = time.Now().UTC()
	_, err := s.db(ctx).ExecContext(ctx, `UPDATE regions SET supply_chain = jsonb_set(supply_chain, '{state}', $2::jsonb), updated_at = now() WHERE id = $1`,
		id, JSON[AdmissionState]{V: st})
	if err != nil {
		return wrap("set admission state", err)
	}
	return s.NotifyRegion(ctx, id)
}

// VerdictOutcome is what the deploy gate decided.
type VerdictOutcome string

// Deploy gate outcomes.
const (
	VerdictAccepted VerdictOutcome = "accepted"
	VerdictRefused  VerdictOutcome = "refused"
)

// VerdictDetail is what the gate found for a verdict.
type VerdictDetail struct {
	SignedBy string         `json:"signed_by,omitempty"`
	SBOM     string         `json:"sbom,omitempty"`
	Scanner  string         `json:"scanner,omitempty"`
	Findings map[string]int `json:"findings,omitempty"`
}

// Verdict is the deploy gate's judgement of one deploy of a project.
type Verdict struct {
	ID        int64               `db:"id" json:"id"`
	RegionID  string              `db:"region_id" json:"region_id"`
	ProjectID string              `db:"project_id" json:"project_id"`
	Project   string              `db:"project" json:"project"`
	Image     string              `db:"image" json:"image"`
	Digest    string              `db:"digest" json:"digest"`
	Verdict   VerdictOutcome      `db:"verdict" json:"verdict"`
	Reason    string              `db:"reason" json:"reason"`
	Detail    JSON[VerdictDetail] `db:"detail" json:"detail"`
	At        time.Time           `db:"at" json:"at"`
}

// RecordVerdict stores a verdict of the deploy gate.
func (s *Store) RecordVerdict(ctx context.Context, v *Verdict) error {
	err := s.db(ctx).GetContext(ctx, v, `INSERT INTO supply_chain_verdicts (region_id, project_id, image, digest, verdict, reason, detail)
		VALUES ($1,$2,$3,$4,$5,$6,$7) RETURNING id, at`, v.RegionID, v.ProjectID, v.Image, v.Digest, v.Verdict, v.Reason, v.Detail)
	return wrap("record verdict", err)
}

// RegionVerdicts returns a region's latest verdicts, newest first, with the project's slug.
func (s *Store) RegionVerdicts(ctx context.Context, regionID string, limit int) ([]Verdict, error) {
	vs := []Verdict{}
	err := s.db(ctx).SelectContext(ctx, &vs, `SELECT v.id, v.region_id, v.project_id, p.slug AS project, v.image, v.digest, v.verdict,
		v.reason, v.detail, v.at FROM supply_chain_verdicts v JOIN projects p ON p.id = v.project_id
		WHERE v.region_id = $1 ORDER BY v.at DESC, v.id DESC LIMIT $2`, regionID, limit)
	return vs, wrap("region verdicts", err)
}

// SetProjectDataLocation records the data location a project requires ("" for none).
func (s *Store) SetProjectDataLocation(ctx context.Context, id, location string) error {
	res, err := s.db(ctx).ExecContext(ctx, `UPDATE projects SET data_location = $2, updated_at = now() WHERE id = $1`, id, location)
	return affected("set project data location "+id, res, err)
}

// ProjectsRequiringLocation lists the slugs of a region's projects that require a data
// location other than loc (compared without case).
func (s *Store) ProjectsRequiringLocation(ctx context.Context, regionID, loc string) ([]string, error) {
	var out []string
	err := s.db(ctx).SelectContext(ctx, &out, `SELECT slug FROM projects WHERE region_id = $1 AND data_location <> ''
		AND lower(data_location) <> lower($2) ORDER BY slug`, regionID, loc)
	return out, wrap("projects requiring a data location", err)
}
