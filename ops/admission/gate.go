package admission

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/problem"
	"runr.dev/console/store"
	"runr.dev/console/supplychain"
)

// gateTimeout bounds the registry reads of one deploy's check.
const gateTimeout = time.Minute

// DefaultFailSeverity is the severity at or above which a scan refuses a deploy when
// the region sets none.
const DefaultFailSeverity = "critical"

// Gate is the deploy check of data residency and of the supply chain: the
// project's data location must be the region's, and on a region with cosign keys the
// image must be signed with one of them and show the attestations the region asks for.
// Every judgement of the image is recorded as the deploy's verdict.
func (s *Service) Gate(ctx context.Context, r *store.Region, p *store.Project) error {
	if why := kit.ResidencyRefusal(r, p); why != "" {
		return &problem.Refused{Field: "data_location", Reason: "Data residency: " + why + "."}
	}
	sc := r.SupplyChain.V
	if !sc.GateOn() {
		return nil
	}
	keys, err := supplychain.ParseKeys(sc.PublicKeys)
	if err != nil {
		return fmt.Errorf("the supply chain keys of region %s: %w", r.Name, err)
	}
	req := supplychain.Requirements{Keys: keys, RequireSBOM: sc.RequireSBOM, RequireScan: sc.RequireScan, FailAt: FailSeverityOf(sc)}
	cctx, cancel := context.WithTimeout(ctx, gateTimeout)
	defer cancel()
	v, err := supplychain.Check(cctx, p.Image, req, s.registryOptions(r, p.Image)...)
	if err != nil {
		return err
	}
	rec := &store.Verdict{RegionID: r.ID, ProjectID: p.ID, Image: p.Image, Digest: v.Digest, Verdict: store.VerdictAccepted,
		Reason: v.Reason(), Detail: store.JSON[store.VerdictDetail]{V: store.VerdictDetail{SignedBy: v.SignedBy, SBOM: v.SBOM}}}
	if v.Scan != nil {
		rec.Detail.V.Scanner, rec.Detail.V.Findings = v.Scan.Scanner, v.Scan.Counts()
	}
	if !v.Accepted {
		rec.Verdict = store.VerdictRefused
	}
	if err := s.Store.RecordVerdict(ctx, rec); err != nil {
		return err
	}
	s.Log.Info("supply chain verdict", "region", r.Name, "project", p.Slug, "image", p.Image, "digest", v.Digest,
		"verdict", rec.Verdict, "reason", rec.Reason)
	if !v.Accepted {
		return &problem.Refused{Field: "image", Reason: "The supply chain gate refused " + p.Image + ": " + v.Reason() + "."}
	}
	return nil
}

// FailSeverityOf is the region's fail severity, critical when it sets none.
func FailSeverityOf(sc store.SupplyChain) string {
	if sc.FailSeverity == "" {
		return DefaultFailSeverity
	}
	return sc.FailSeverity
}

// registryOptions are how the gate reads an image's registry: through the address
// policy, and with the region's external registry credentials for that registry only.
func (s *Service) registryOptions(r *store.Region, image string) []remote.Option {
	opts := []remote.Option{remote.WithTransport(kube.PolicyTransport(s.Cfg.AllowLoopbackClusters))}
	rc := r.RegistryConfig.V
	if r.RegistryMode != store.RegistryExternal || rc.ExternalUsername == "" || r.RegistrySecret == "" {
		return opts
	}
	ref, err := name.ParseReference(image, name.WeakValidation)
	if err != nil || !strings.EqualFold(ref.Context().RegistryStr(), strings.TrimSuffix(rc.ExternalAddress, "/")) {
		return opts
	}
	return append(opts, remote.WithAuth(authn.FromConfig(authn.AuthConfig{Username: rc.ExternalUsername, Password: r.RegistrySecret})))
}
