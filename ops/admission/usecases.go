package admission

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"runr.dev/console/engine"
	"runr.dev/console/ops/kit"
	"runr.dev/console/problem"
	"runr.dev/console/store"
	"runr.dev/console/supplychain"
)

// Limits of the supply chain settings.
const (
	maxPublicKeys  = 10
	maxKeyLength   = 16 << 10
	maxImageGlobs  = 20
	maxGlobLength  = 255
	verdictsOnPage = 20
)

// SupplyChainInput is the body of PUT /api/knative-regions/{id}/supply-chain: only the
// keys sent change.
type SupplyChainInput struct {
	PublicKeys   *[]string `json:"public_keys"`
	RequireSBOM  *bool     `json:"require_sbom"`
	RequireScan  *bool     `json:"require_scan"`
	FailSeverity *string   `json:"fail_severity"`
	// Admission applies (true) or removes (false) the admission policy in the cluster.
	Admission       *bool     `json:"admission"`
	AdmissionMode   *string   `json:"admission_mode"`
	AdmissionImages *[]string `json:"admission_images"`
	DataLocation    *string   `json:"data_location"`
}

// SupplyChainChange is what PUT …/supply-chain did: the settings stored and the job that
// applies or removes the admission policy (nil when the cluster has nothing to change).
type SupplyChainChange struct {
	Settings     store.SupplyChain
	DataLocation string
	Job          *store.Job
}

// SupplyChainOf is a region's supply chain settings with their defaults: mode enforce,
// the region registry's images for the admission policy.
func SupplyChainOf(r *store.Region) store.SupplyChain {
	v := r.SupplyChain.V
	if v.Admission.Mode == "" {
		v.Admission.Mode = store.AdmissionEnforce
	}
	if len(v.Admission.Images) == 0 {
		v.Admission.Images = defaultImageGlobs(r)
	}
	if v.FailSeverity == "" {
		v.FailSeverity = DefaultFailSeverity
	}
	return v
}

// SetSupplyChain validates and stores a region's supply chain settings and data
// location (422 with field errors, nothing stored, when one is wrong) and queues the
// admission policy's apply or removal when the cluster has to change.
func (s *Service) SetSupplyChain(ctx context.Context, actor kit.Actor, r *store.Region, in SupplyChainInput) (*SupplyChainChange, error) {
	old := SupplyChainOf(r)
	v, loc, fields := applySupplyChainInput(old, r.DataLocation, in)
	if fields["data_location"] == "" && !strings.EqualFold(loc, r.DataLocation) {
		held, err := s.Store.ProjectsRequiringLocation(ctx, r.ID, loc)
		if err != nil {
			return nil, err
		}
		if len(held) > 0 {
			fields["data_location"] = fmt.Sprintf("Projects of this region require another data location: %s. Move them first.", strings.Join(held, ", "))
		}
	}
	if err := problem.FromFields(fields); err != nil {
		return nil, err
	}
	apply, remove := admissionChange(old, v)
	if apply || remove {
		if err := s.admissionBusy(ctx, r); err != nil {
			return nil, err
		}
	}
	if err := s.Store.SetSupplyChain(ctx, r.ID, v, loc); err != nil {
		return nil, err
	}
	s.Log.Info("supply chain set", "region", r.Name, "keys", len(v.PublicKeys), "sbom", v.RequireSBOM, "scan", v.RequireScan,
		"fail_severity", v.FailSeverity, "admission", v.Admission.Enabled, "mode", v.Admission.Mode, "data_location", loc, "by", actor.Email)
	out := &SupplyChainChange{Settings: v, DataLocation: loc}
	var err error
	switch {
	case apply:
		out.Job, err = s.Enqueue(ctx, engine.Request{Kind: KindAdmissionApply, Title: "Apply the admission policy of " + r.Name, Subject: r.ID, CreatedBy: actor.Email})
	case remove:
		out.Job, err = s.Enqueue(ctx, engine.Request{Kind: KindAdmissionRemove, Title: "Remove the admission policy of " + r.Name, Subject: r.ID, CreatedBy: actor.Email})
	}
	out.Settings.State = r.SupplyChain.V.State
	return out, err
}

// applySupplyChainInput applies the keys sent to the settings and checks them, with a
// message per wrong field.
func applySupplyChainInput(v store.SupplyChain, loc string, in SupplyChainInput) (store.SupplyChain, string, map[string]string) {
	fields := map[string]string{}
	if in.PublicKeys != nil {
		v.PublicKeys = cleanList(*in.PublicKeys)
		if m := validatePublicKeys(v.PublicKeys); m != "" {
			fields["public_keys"] = m
		}
	}
	setBool(&v.RequireSBOM, in.RequireSBOM)
	setBool(&v.RequireScan, in.RequireScan)
	setBool(&v.Admission.Enabled, in.Admission)
	if in.FailSeverity != nil {
		v.FailSeverity = strings.ToLower(strings.TrimSpace(*in.FailSeverity))
		if !supplychain.ValidSeverity(v.FailSeverity) {
			fields["fail_severity"] = "Choose " + strings.Join(supplychain.Severities, ", ") + "."
		}
	}
	if in.AdmissionMode != nil {
		v.Admission.Mode = store.AdmissionMode(strings.TrimSpace(*in.AdmissionMode))
		if v.Admission.Mode != store.AdmissionEnforce && v.Admission.Mode != store.AdmissionWarn {
			fields["admission_mode"] = "Choose enforce (refuse unsigned images) or warn (admit them with a warning)."
		}
	}
	if in.AdmissionImages != nil {
		v.Admission.Images = cleanList(*in.AdmissionImages)
		if m := validateImageGlobs(v.Admission.Images); m != "" {
			fields["admission_images"] = m
		} else if len(v.Admission.Images) > maxImageGlobs || slices.ContainsFunc(v.Admission.Images, func(g string) bool { return len(g) > maxGlobLength }) {
			fields["admission_images"] = fmt.Sprintf("Give at most %d globs of up to %d characters.", maxImageGlobs, maxGlobLength)
		}
	}
	if in.DataLocation != nil {
		loc = strings.TrimSpace(*in.DataLocation)
		if m := kit.ValidateDataLocation(loc); m != "" {
			fields["data_location"] = m
		}
	}
	needKeys(v, fields)
	return v, loc, fields
}

func setBool(to *bool, v *bool) {
	if v != nil {
		*to = *v
	}
}

// needKeys refuses what needs a key without one: SBOM and scan attestations are verified
// with the keys, and the admission policy requires signatures by them (and image globs).
func needKeys(v store.SupplyChain, fields map[string]string) {
	if len(v.PublicKeys) > 0 || fields["public_keys"] != "" {
		if v.Admission.Enabled && len(v.Admission.Images) == 0 && fields["admission_images"] == "" {
			fields["admission_images"] = "Give the images the admission policy covers, e.g. registry.example.com/acme/**."
		}
		return
	}
	switch {
	case v.Admission.Enabled:
		fields["public_keys"] = "Give at least one cosign public key: the admission policy requires images signed by it."
	case v.RequireSBOM || v.RequireScan:
		fields["public_keys"] = "Give at least one cosign public key: SBOM and scan attestations are verified with it."
	}
}

// validatePublicKeys checks the cosign public keys, or says which one is wrong.
func validatePublicKeys(pems []string) string {
	if len(pems) > maxPublicKeys {
		return fmt.Sprintf("Give at most %d keys.", maxPublicKeys)
	}
	for _, p := range pems {
		if len(p) > maxKeyLength {
			return "A public key is a few hundred characters; this one is too long."
		}
	}
	if _, err := supplychain.ParseKeys(pems); err != nil {
		return "Not a cosign public key: " + err.Error() + "."
	}
	return ""
}

// admissionChange says whether the cluster's policy must be applied (wanted and changed,
// or not ready) or removed (no longer wanted but there).
func admissionChange(old, v store.SupplyChain) (apply, remove bool) {
	state := v.State.Current()
	if !v.Admission.Enabled {
		return false, state != store.ComponentNotInstalled && old.Admission.Enabled
	}
	changed := !old.Admission.Enabled || old.Admission.Mode != v.Admission.Mode ||
		!slices.Equal(old.Admission.Images, v.Admission.Images) || !slices.Equal(old.PublicKeys, v.PublicKeys)
	return changed || state != store.ComponentReady, false
}

// admissionBusy refuses a second admission job while one runs on the region.
func (s *Service) admissionBusy(ctx context.Context, r *store.Region) error {
	b, err := s.Busy(ctx, r.ID, AdmissionKinds...)
	if err != nil {
		return err
	}
	if b {
		return &problem.Refused{Reason: "The admission policy of this region is being changed; wait for that job to finish."}
	}
	return nil
}

// RemoveAdmission queues the removal of the region's admission policy; its settings stay
// (DELETE /api/knative-regions/{id}/supply-chain/admission).
func (s *Service) RemoveAdmission(ctx context.Context, actor kit.Actor, r *store.Region) (*store.Job, error) {
	sc := r.SupplyChain.V
	if !sc.Admission.Enabled && sc.State.Current() == store.ComponentNotInstalled {
		return nil, &problem.Refused{Reason: "Region " + r.Name + " has no admission policy."}
	}
	if err := s.admissionBusy(ctx, r); err != nil {
		return nil, err
	}
	if err := s.Store.SetAdmissionWanted(ctx, r.ID, false); err != nil {
		return nil, err
	}
	req := removeRequest(r)
	req.CreatedBy = actor.Email
	return s.Enqueue(ctx, req)
}

func removeRequest(r *store.Region) engine.Request {
	return engine.Request{Kind: KindAdmissionRemove, Title: "Remove the admission policy of " + r.Name, Subject: r.ID}
}

// TeardownParts is the removal of the region's admission policy when it has one, for
// the removal of a region with what the console installed.
func (s *Service) TeardownParts(r *store.Region) ([]engine.Part, error) {
	sc := r.SupplyChain.V
	if !sc.Admission.Enabled && sc.State.Current() == store.ComponentNotInstalled {
		return nil, nil
	}
	p, err := engine.PartOf("Admission policy", removeRequest(r))
	return []engine.Part{p}, err
}

// RegionVerdicts are the latest verdicts of the deploy gate on a region.
func (s *Service) RegionVerdicts(ctx context.Context, r *store.Region) ([]store.Verdict, error) {
	return s.Store.RegionVerdicts(ctx, r.ID, verdictsOnPage)
}
