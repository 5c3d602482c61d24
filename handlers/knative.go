package handlers

import (
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/engine"
	"runr.dev/console/ops"
	"runr.dev/console/store"
)

// k8sMinor reads the stored Kubernetes minor of a region ("v1.32.4" → 32).
func k8sMinor(r *store.Region) int {
	parts := strings.Split(strings.TrimPrefix(r.K8sVersion, "v"), ".")
	if len(parts) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(parts[1])
	return n
}

// compatible returns the Knative versions offered to a region's cluster.
func (h *Handlers) compatible(c *fiber.Ctx, r *store.Region) ([]ops.KnativeVersion, error) {
	return h.Kube.CompatibleVersions(ctx(c), k8sMinor(r))
}

// resolveVersion maps "1.20" (or a release of it, "1.20.3") to an offered minor; "" picks the newest.
func resolveVersion(vs []ops.KnativeVersion, want string) (*ops.KnativeVersion, string) {
	if len(vs) == 0 {
		return nil, "No Knative version is offered for this cluster (its Kubernetes, or the operator chart repository)."
	}
	if want == "" {
		return &vs[0], ""
	}
	want = ops.MinorOf(want)
	for i, v := range vs {
		if v.Minor == want {
			return &vs[i], ""
		}
	}
	offered := make([]string, len(vs))
	for i, v := range vs {
		offered[i] = v.Version
	}
	return nil, "Knative " + want + " is not offered for this cluster; choose one of " + strings.Join(offered, ", ") + "."
}

// APICompatibleVersions is GET /api/knative-regions/{id}/compatible-versions.
func (h *Handlers) APICompatibleVersions(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	vs, err := h.compatible(c, r)
	if err != nil {
		return JSONError(c, fiber.StatusBadGateway, h.Cause(c, "The Knative Operator chart repository could not be read", err))
	}
	if vs == nil {
		vs = []ops.KnativeVersion{}
	}
	return c.JSON(fiber.Map{"data": vs, "kubernetes_version": r.K8sVersion})
}

// KnativeInput is the body of the Knative install routes.
type KnativeInput struct {
	Version           string `json:"version"`
	Namespace         string `json:"namespace"`
	OperatorNamespace string `json:"operator_namespace"`
	RemoveTraefik     bool   `json:"remove_traefik"`
	// IngressMode is load_balancer (default) or host_network (Serving installs only).
	IngressMode string `json:"ingress_mode"`
}

func optionalBody(c *fiber.Ctx, v any) error {
	if len(c.Body()) == 0 {
		return nil
	}
	return bodyMap(c, v)
}

func validNamespace(ns, def string) (string, string) {
	if ns == "" {
		return def, ""
	}
	if m := ValidateRegionName(ns); m != "" {
		return "", "Not a valid namespace name: " + m
	}
	return ns, ""
}

// busy refuses a second Knative job while one runs on the region.
func (h *Handlers) busy(c *fiber.Ctx, r *store.Region, kinds ...string) (bool, error) {
	for _, k := range kinds {
		if _, err := h.Store.ActiveJob(ctx(c), r.ID, k); err == nil {
			return true, nil
		} else if !isNotFoundErr(err) {
			return false, err
		}
	}
	return false, nil
}

var knativeKinds = []string{ops.KindInstallOperator, ops.KindInstallServing, ops.KindInstallKnative, ops.KindUpgradeServing,
	ops.KindUninstallServing, ops.KindUninstallOperator, ops.KindUninstallKnative}

// enqueueKnative validates and queues one of the Knative jobs; it returns the job or a
// 422 reason.
func (h *Handlers) enqueueKnative(c *fiber.Ctx, r *store.Region, kind string, in KnativeInput) (*store.Job, FieldErrors, string, error) {
	if b, err := h.busy(c, r, knativeKinds...); err != nil {
		return nil, nil, "", err
	} else if b {
		return nil, nil, "A Knative job of this region runs already; wait for it to finish.", nil
	}
	opNS, m := validNamespace(in.OperatorNamespace, r.OperatorNamespace)
	if m != "" {
		return nil, FieldErrors{"operator_namespace": m}, "", nil
	}
	svNS, m := validNamespace(in.Namespace, r.ServingNamespace)
	if m != "" {
		return nil, FieldErrors{"namespace": m}, "", nil
	}
	switch in.IngressMode {
	case "", ops.IngressLoadBalancer, ops.IngressHostNetwork:
	default:
		return nil, FieldErrors{"ingress_mode": "Choose load_balancer (a LoadBalancer Service) or host_network (a DaemonSet on ports 80 and 443 of every node)."}, "", nil
	}
	req := engine.Request{Kind: kind, Subject: r.ID, CreatedBy: Who(c).User.Email}
	needVersion := kind == ops.KindInstallOperator || kind == ops.KindInstallServing || kind == ops.KindInstallKnative || kind == ops.KindUpgradeServing
	var ver *ops.KnativeVersion
	if needVersion {
		vs, err := h.compatible(c, r)
		if err != nil {
			return nil, nil, h.Cause(c, "The Knative Operator chart repository could not be read", err), nil
		}
		if kind == ops.KindUpgradeServing {
			if r.ServingStatus != store.ComponentReady {
				return nil, nil, "Knative Serving is not ready on this region (" + string(r.ServingStatus) + "): install it first.", nil
			}
			next, err := h.Kube.NextMinor(ctx(c), r.KnativeVersion, k8sMinor(r))
			if err != nil {
				return nil, nil, "No upgrade: " + err.Error(), nil
			}
			if want := ops.MinorOf(in.Version); want != "" && want != next.Minor {
				return nil, FieldErrors{"version": "Knative upgrades one minor version at a time: from " + r.KnativeVersion + " the next is " + next.Version + "."}, "", nil
			}
			ver = next
		} else {
			v, msg := resolveVersion(vs, in.Version)
			if msg != "" {
				return nil, FieldErrors{"version": msg}, "", nil
			}
			ver = v
		}
	}
	switch kind {
	case ops.KindInstallOperator:
		req.Title, req.Params = "Install the Knative Operator on "+r.Name, ops.OperatorParams{Namespace: opNS, Version: ver.Version}
	case ops.KindInstallServing:
		if r.OperatorStatus != store.ComponentReady {
			return nil, nil, "Install the Knative Operator first (its status is " + string(r.OperatorStatus) + ").", nil
		}
		req.Title, req.Params = "Install Knative Serving "+ver.Version+" on "+r.Name, ops.ServingParams{Namespace: svNS, Version: ver.Version, IngressMode: in.IngressMode}
	case ops.KindInstallKnative:
		req.Title = "Install Knative " + ver.Version + " on " + r.Name
		req.Params = map[string]any{"operator": ops.OperatorParams{Namespace: opNS, Version: ver.Version}, "serving": ops.ServingParams{Namespace: svNS, Version: ver.Version, IngressMode: in.IngressMode}}
	case ops.KindUpgradeServing:
		req.Title, req.Params = "Upgrade Knative Serving of "+r.Name+" to "+ver.Version, ops.ServingParams{Namespace: r.ServingNamespace, Version: ver.Version}
	case ops.KindUninstallServing:
		if r.ServingStatus == store.ComponentNotInstalled {
			return nil, nil, "Knative Serving is not installed on this region.", nil
		}
		req.Title, req.Params = "Uninstall Knative Serving of "+r.Name, ops.ServingParams{Namespace: r.ServingNamespace, RemoveTraefik: in.RemoveTraefik}
	case ops.KindUninstallOperator:
		if r.ServingStatus != store.ComponentNotInstalled {
			return nil, nil, "Uninstall Knative Serving first: removing the operator removes the Knative CRDs, and with them every Knative Service.", nil
		}
		req.Title = "Uninstall the Knative Operator of " + r.Name
	case ops.KindUninstallKnative:
		req.Title, req.Params = "Uninstall Knative of "+r.Name, ops.ServingParams{Namespace: r.ServingNamespace, RemoveTraefik: in.RemoveTraefik}
	}
	j, err := h.Kube.Enqueue(ctx(c), req)
	return j, nil, "", err
}

// KnativeAction is the API handler of one Knative route: 202 with the job, or 422.
func (h *Handlers) KnativeAction(kind string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
		if err != nil {
			return h.Fail(c, err)
		}
		var in KnativeInput
		if err := optionalBody(c, &in); err != nil {
			return h.Fail(c, err)
		}
		j, fe, msg, err := h.enqueueKnative(c, r, kind, in)
		return h.Accepted(c, j, fe, msg, err)
	}
}

// RedisInput is the body of POST /api/knative-regions/{id}/redis.
type RedisInput struct {
	Mode     store.RedisMode `json:"mode"`
	Address  string          `json:"address"`
	Password string          `json:"password"`
}

func (h *Handlers) enqueueRedis(c *fiber.Ctx, r *store.Region, in RedisInput) (*store.Job, FieldErrors, error) {
	switch in.Mode {
	case store.RedisManaged:
	case store.RedisExternal:
		if m := validateHostPort(in.Address); m != "" {
			return nil, FieldErrors{"address": m}, nil
		}
	default:
		return nil, FieldErrors{"mode": "Choose managed or external."}, nil
	}
	j, err := h.Kube.Enqueue(ctx(c), engine.Request{Kind: ops.KindRedisInstall, Title: "Set up the Redis of " + r.Name, Subject: r.ID,
		Params: ops.RedisParams{Mode: in.Mode, Address: in.Address}, Secret: in.Password, CreatedBy: Who(c).User.Email})
	return j, nil, err
}

// APISetRedis is POST /api/knative-regions/{id}/redis.
func (h *Handlers) APISetRedis(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	var in RedisInput
	if err := bodyMap(c, &in); err != nil {
		return h.Fail(c, err)
	}
	j, fe, err := h.enqueueRedis(c, r, in)
	return h.Accepted(c, j, fe, "", err)
}

// APIDeleteRedis is DELETE /api/knative-regions/{id}/redis.
func (h *Handlers) APIDeleteRedis(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	j, err := h.Kube.Enqueue(ctx(c), engine.Request{Kind: ops.KindRedisRemove, Title: "Remove the Redis of " + r.Name, Subject: r.ID, CreatedBy: Who(c).User.Email})
	if err != nil {
		return h.Fail(c, err)
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"job_id": j.ID})
}

// APITestRedis is POST /api/knative-regions/{id}/test-redis: a PING from a pod.
func (h *Handlers) APITestRedis(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(ctx(c), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	if r.RedisAddress == "" {
		return Unprocessable(c, "The region has no Redis to test: install the managed Redis or set an external one.")
	}
	j, err := h.Kube.Enqueue(ctx(c), engine.Request{Kind: ops.KindRedisTest, Title: "Test the Redis of " + r.Name, Subject: r.ID, CreatedBy: Who(c).User.Email})
	if err != nil {
		return h.Fail(c, err)
	}
	return c.Status(fiber.StatusAccepted).JSON(fiber.Map{"job_id": j.ID})
}
