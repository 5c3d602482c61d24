package ops

import (
	"net"
	"net/url"
	"regexp"
	"strings"

	"runr.dev/console/imagemirror"
	"runr.dev/console/kube"
	"runr.dev/console/ops/kit"
	"runr.dev/console/ops/preflight"
	"runr.dev/console/ops/redis"
	"runr.dev/console/ops/registry"
)

// monitoringURLRe is the spec's in-cluster Service URL:
// http(s)://<service>.<namespace>.svc[.cluster.local]:<port>[/path]
var monitoringURLRe = regexp.MustCompile(`^https?://[a-z0-9]([-a-z0-9]*[a-z0-9])?\.[a-z0-9]([-a-z0-9]*[a-z0-9])?\.svc(\.cluster\.local)?:[0-9]{1,5}(/[^\s]*)?$`)

// ValidateMonitoringURL checks an existing Prometheus or Loki address ("" is RunR's own).
func ValidateMonitoringURL(u string) string {
	if u == "" {
		return ""
	}
	if !monitoringURLRe.MatchString(u) {
		return "Use an in-cluster Service URL: http(s)://<service>.<namespace>.svc[.cluster.local]:<port>[/path]."
	}
	return ""
}

// validate checks a setup's fields (the cluster is not contacted); kubeconfig problems
// are reported on its field. It trims the name.
func (in *SetupInput) validate() map[string]string {
	errs := map[string]string{}
	in.Name = strings.TrimSpace(in.Name)
	if m := kit.ValidateRegionName(in.Name); m != "" {
		errs["name"] = m
	}
	if _, err := kube.ParseKubeconfig([]byte(in.Kubeconfig)); err != nil {
		errs["kubeconfig"] = err.Error()
	}
	reg, sec := in.Input.Params()
	registry.Validate(reg, sec, errs)
	for k, v := range map[string]string{"prometheus_url": in.PrometheusURL, "loki_url": in.LokiURL} {
		if m := ValidateMonitoringURL(v); m != "" {
			errs[k] = m
		}
	}
	if in.RedisMode != "" {
		for k, m := range redis.Validate(in.RedisMode, in.RedisAddress) {
			errs["redis_"+k] = m
		}
	}
	for _, n := range in.Nodes {
		if n == "" || len(n) > 253 {
			errs["nodes"] = "Node names must not be empty."
		}
	}
	in.DataLocation = strings.TrimSpace(in.DataLocation)
	if m := kit.ValidateDataLocation(in.DataLocation); m != "" {
		errs["data_location"] = m
	}
	return errs
}

// checkRefusal turns a failed cluster check into field errors.
func checkRefusal(chk *preflight.Result) map[string]string {
	errs := map[string]string{}
	for _, it := range chk.Items {
		if it.Status != kit.CheckFail {
			continue
		}
		field := "kubeconfig"
		if it.Key == "namespace" {
			field = "name"
		}
		if _, ok := errs[field]; !ok {
			errs[field] = it.Title + ": " + it.Evidence
		}
	}
	return errs
}

// validateRequestTimeout checks a region's request timeout: 1 to 3600 seconds.
func validateRequestTimeout(seconds int) string {
	if seconds < 1 || seconds > 3600 {
		return "Use 1 to 3600 seconds."
	}
	return ""
}

// validateSettings checks the General settings that are set, normalises the trusted
// addresses to CIDRs and the image mirror.
func validateSettings(in *SettingsInput) map[string]string {
	errs := map[string]string{}
	if in.RequestTimeout != nil {
		if m := validateRequestTimeout(*in.RequestTimeout); m != "" {
			errs["request_timeout"] = m
		}
	}
	if in.AgentWSURL != nil && *in.AgentWSURL != "" {
		u, err := url.Parse(*in.AgentWSURL)
		if err != nil || u.Host == "" || (u.Scheme != "wss" && u.Scheme != "ws" && u.Scheme != "https" && u.Scheme != "http") {
			errs["agent_ws_url"] = "Use a wss:// (or https://) address the region's agent can reach, e.g. wss://runr.internal.example.com."
		}
	}
	if in.IngressTrustedIPs != nil {
		cidrs, m := trustedCIDRs(*in.IngressTrustedIPs)
		if m != "" {
			errs["ingress_trusted_ips"] = m
		}
		*in.IngressTrustedIPs = cidrs
	}
	if in.ImageMirror != nil {
		*in.ImageMirror = imagemirror.Normalize(*in.ImageMirror)
		if m := imagemirror.Validate(*in.ImageMirror); m != "" {
			errs["image_mirror"] = m
		}
	}
	return errs
}

// trustedCIDRs normalises trusted addresses to CIDRs (a bare address is a /32 or a
// /128), or says which one is not an address.
func trustedCIDRs(list []string) ([]string, string) {
	out := []string{}
	for _, v := range list {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if ip := net.ParseIP(v); ip != nil {
			if ip.To4() != nil {
				v += "/32"
			} else {
				v += "/128"
			}
		}
		_, n, err := net.ParseCIDR(v)
		if err != nil {
			return out, "Not a CIDR: " + v + " (use e.g. 10.0.0.0/24)."
		}
		out = append(out, n.String())
	}
	return out, ""
}
