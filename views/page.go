// Package views holds the console's templ pages, components and htmx fragments.
package views

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/a-h/templ"
)

// Page is what every page needs to know about the request.
type Page struct {
	Title  string
	Active string // navigation entry: regions, projects, users, tokens, platform
	User   string
	Role   string
	// Can is what the current user may do, as the pages ask it.
	Can   Permissions
	CSRF  string
	Flash string
	// LiveLists: the page has a part that follows the lists live ([data-live-list]).
	LiveLists bool
	// Banners are the region moves under way, shown on every page.
	Banners []MigrationBanner
	// Tenant is the name of the user's tenant ("" for a platform user; Tenancy module).
	Tenant string
	// Brand is the white-label look (the console's own when empty).
	Brand Brand
}

// Brand is the white-label look a page shows.
type Brand struct {
	ProductName string
	CompanyName string
	// LogoURL and FaviconURL are the images' addresses ("" for none).
	LogoURL, FaviconURL   string
	LoginTitle, LoginText string
	// Colors are the CSS custom properties of the primary scale (--brand-600: "r g b").
	Colors map[string]string
}

// Product is the product's name: the brand's, or the console's own.
func (b Brand) Product() string {
	if b.ProductName == "" {
		return "runr regions"
	}
	return b.ProductName
}

// colorStyle is the page's :root rule with the brand's colour scale ("" without one).
func (b Brand) colorStyle() string {
	if len(b.Colors) == 0 {
		return ""
	}
	keys := make([]string, 0, len(b.Colors))
	for k := range b.Colors {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	sb.WriteString(":root{")
	for _, k := range keys {
		fmt.Fprintf(&sb, "%s:%s;", k, b.Colors[k])
	}
	sb.WriteString("}")
	return sb.String()
}

// Permissions are the permissions the pages ask about, one field each; handlers fill
// them from the user's permissions.
type Permissions struct {
	RegionsManage  bool
	RegistryManage bool
	ProjectsView   bool
	ProjectsManage bool
	ProjectsDeploy bool
	SettingsView   bool
	SettingsManage bool
	UsersView      bool
	UsersManage    bool
	TokensManage   bool
	// JobsView shows the Jobs page in the menu.
	JobsView bool
	// SandboxManage opens the Isolation tab; SandboxesManage changes the Sandbox API's settings.
	SandboxManage   bool
	SandboxesManage bool
	// RegionsGpuManage opens the GPU tab.
	RegionsGpuManage bool
	// RegionsDataServicesManage opens the Data services tab.
	RegionsDataServicesManage bool
	// RegionsSupplyChainManage opens the Supply chain tab.
	RegionsSupplyChainManage bool
	// TenantsView opens the Tenants page; TenantsManage changes tenants and assignments.
	TenantsView   bool
	TenantsManage bool
	// BillingView opens the Billing tab and Settings → Billing; BillingManage changes them.
	BillingView   bool
	BillingManage bool
}

// Option is one choice of a select or a radio group.
type Option struct {
	Value    string
	Label    string
	Selected bool
}

// SettingField is one input of a settings form: its saved value ("" the default the
// hint names).
type SettingField struct {
	Name, Label, Type, Value, Hint string
}

// MigrationBanner announces a region move in dns_check, counting down its 48 hours.
type MigrationBanner struct {
	RegionID   string
	RegionName string
	Status     string
	Deadline   time.Time
}

// Form carries submitted values and field errors back to a form.
type Form struct {
	Values map[string]string
	Errors map[string]string
	// Error is a message about the whole form.
	Error string
}

// V returns a submitted value.
func (f Form) V(k string) string {
	if f.Values == nil {
		return ""
	}
	return f.Values[k]
}

// E returns the error of a field.
func (f Form) E(k string) string {
	if f.Errors == nil {
		return ""
	}
	return f.Errors[k]
}

// errAttrs marks a field with an error invalid and points it at the message.
func errAttrs(f Form, key string) templ.Attributes {
	if f.E(key) == "" {
		return templ.Attributes{}
	}
	return templ.Attributes{"aria-invalid": "true", "aria-describedby": "err-" + key}
}

// Ago renders a time as a short relative duration.
func Ago(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "never"
	}
	return Since(time.Since(*t)) + " ago"
}

// Since renders a duration shortly: 5 s, 3 min, 2 h, 4 d.
func Since(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d.Hours()))
	default:
		return fmt.Sprintf("%d d", int(d.Hours()/24))
	}
}

// statusLabels are the words a person reads for the states whose API value is not one.
var statusLabels = map[string]string{
	"not_installed": "not installed", "in_progress": "in progress", "dns_check": "waiting for DNS",
	"rolled_back": "rolled back", "no_heartbeat": "no heartbeat",
}

// StatusLabel is a state as a person reads it (the API keeps its value): "not_installed"
// reads "not installed", "dns_check" "waiting for DNS"; any other underscore is a space.
func StatusLabel(s string) string {
	if l, ok := statusLabels[s]; ok {
		return l
	}
	return strings.ReplaceAll(s, "_", " ")
}

// StatusColor maps a status word to badge classes.
func StatusColor(s string) string {
	switch s {
	case "ready", "active", "done", "succeeded", "pass", "ok", "running", "connected", "resolved", "completed", "installed", "accepted", "delivered":
		return "bg-emerald-100 text-emerald-800 dark:bg-emerald-900/60 dark:text-emerald-200"
	case "installing", "pending", "queued", "in_progress", "dns_check", "maintenance", "warn", "degraded", "upgrading", "removing":
		return "bg-amber-100 text-amber-800 dark:bg-amber-900/60 dark:text-amber-200"
	case "error", "failed", "fail", "down", "inactive", "no_heartbeat", "unreachable", "cancelled", "refused", "dead":
		return "bg-rose-100 text-rose-800 dark:bg-rose-900/60 dark:text-rose-200"
	default:
		return "bg-slate-100 text-slate-700 dark:bg-slate-800 dark:text-slate-300"
	}
}

func itoa(n int) string { return fmt.Sprint(n) }

// rawBytes writes HTML rendered beforehand as it is (templ.Raw without a string copy).
func rawBytes(b []byte) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// imageMirrorHint is the General tab's hint for a region's image mirror.
func imageMirrorHint(console string) string {
	takes := "no mirror: images come from their own registries"
	if console != "" {
		takes = "the console's mirror, " + console
	}
	return "A registry of your own holding copies of the images under their paths (<mirror>/ghcr.io/…, <mirror>/docker.io/…), e.g. registry.example.com:5000/mirror. Empty takes " + takes + ". New installs use it at once; runr reconcile --step image-mirror moves what runs."
}

// effectiveMirror names the mirror a region's images come from.
func effectiveMirror(own, console string) string {
	switch {
	case own != "":
		return own
	case console != "":
		return console + " (the console's)"
	}
	return "none: images come from their own registries"
}
