package lifecycle

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"runr.dev/console/handlers"
	"runr.dev/console/ops/knative"
	"runr.dev/console/store"
)

// APICompatibleVersions is GET /api/knative-regions/{id}/compatible-versions.
func (h *Handlers) APICompatibleVersions(c *fiber.Ctx) error {
	r, err := h.Store.RegionByID(c.UserContext(), c.Params("id"))
	if err != nil {
		return h.Fail(c, err)
	}
	vs, err := h.Ops.Knative.RegionVersions(c.UserContext(), r)
	if err != nil {
		return handlers.JSONError(c, fiber.StatusBadGateway, h.Cause(c, "The Knative Operator chart repository could not be read", err))
	}
	if vs == nil {
		vs = []knative.Version{}
	}
	return c.JSON(fiber.Map{"data": vs, "kubernetes_version": r.K8sVersion})
}

// KnativeAction is the API handler of one Knative route: 202 with the job, or 422.
func (h *Handlers) KnativeAction(kind string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		r, err := h.Store.RegionByID(c.UserContext(), c.Params("id"))
		if err != nil {
			return h.Fail(c, err)
		}
		var in knative.Input
		if err := handlers.OptionalBody(c, &in); err != nil {
			return h.Fail(c, err)
		}
		j, err := h.Ops.Knative.Start(c.UserContext(), h.Actor(c), r, kind, in)
		return h.Accepted(c, j, err)
	}
}

// KnativeForm runs one of the Knative actions from the Operator and Serving tabs.
func (h *Handlers) KnativeForm(c *fiber.Ctx) error {
	r, err := h.RegionForm(c)
	if err != nil {
		return h.Fail(c, err)
	}
	kind, ok := knativeFormKinds[c.Params("action")]
	if !ok {
		return h.Fail(c, store.ErrNotFound)
	}
	tab := "serving"
	if strings.HasSuffix(kind, "operator") {
		tab = "operator"
	}
	version := c.FormValue("version")
	if version == "" {
		version = c.Query("version")
	}
	in := knative.Input{Version: version, Namespace: c.FormValue("namespace"), OperatorNamespace: c.FormValue("operator_namespace"),
		RemoveTraefik: c.FormValue("remove_traefik") == "1", IngressMode: c.FormValue("ingress_mode")}
	_, err = h.Ops.Knative.Start(c.UserContext(), h.Actor(c), r, kind, in)
	return h.FormOutcome(c, r, tab, map[string]string{"namespace": in.Namespace, "operator_namespace": in.OperatorNamespace, "ingress_mode": in.IngressMode}, err, "")
}

// knativeFormKinds are the Knative jobs of the Operator and Serving tabs, by the action in their path.
var knativeFormKinds = map[string]string{"install-operator": knative.KindInstallOperator, "install-serving": knative.KindInstallServing,
	"upgrade": knative.KindUpgradeServing, "uninstall-serving": knative.KindUninstallServing, "uninstall-operator": knative.KindUninstallOperator}
