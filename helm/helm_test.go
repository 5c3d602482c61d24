package helm

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	helmaction "helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"runr.dev/console/kube"
	"runr.dev/console/testcluster"
)

// tinyChart is a chart of one ConfigMap named after its release.
func tinyChart(version string) *chart.Chart {
	return &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "tiny", Version: version, AppVersion: "1.0"},
		Values:   map[string]any{"greeting": "hello"},
		Templates: []*chart.File{{Name: "templates/configmap.yaml", Data: []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  greeting: {{ .Values.greeting | quote }}
`)}},
	}
}

// logLines collects the lines Options.Logf receives.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logLines) has(text string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.lines {
		if strings.Contains(s, text) {
			return true
		}
	}
	return false
}

type fixture struct {
	t *testing.T
	c *kube.Cluster
}

func (f fixture) apply(ns, name string, values map[string]any, repair bool, log *logLines) *release.Release {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	o := Options{Timeout: 60 * time.Second}
	if log != nil {
		o.Logf = log.logf
	}
	rel, err := Apply(ctx, f.c, Release{Namespace: ns, Name: name, Chart: tinyChart("0.1.0"), Values: values, Repair: repair}, o)
	if err != nil {
		f.t.Fatalf("Apply %s/%s: %v", ns, name, err)
	}
	return rel
}

// greeting is what the release's ConfigMap holds ("" when it does not exist).
func (f fixture) greeting(ns, name string) string {
	f.t.Helper()
	cm, err := f.c.Clientset.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return cm.Data["greeting"]
}

func (f fixture) revisionStatus(ns, name string, revision int) release.Status {
	f.t.Helper()
	rel, err := Revision(f.c, ns, name, revision)
	if err != nil {
		f.t.Fatal(err)
	}
	return rel.Info.Status
}

func (f fixture) deployed(ns string) map[string]int {
	f.t.Helper()
	m, err := Deployed(context.Background(), f.c, ns)
	if err != nil {
		f.t.Fatal(err)
	}
	return m
}

// simulatedCluster starts a simulated cluster and reaches it as the console does.
func simulatedCluster(t *testing.T) *kube.Cluster {
	t.Helper()
	tc := testcluster.New(t, testcluster.Options{})
	kc, err := kube.ParseKubeconfig(tc.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	kc.AllowLoopback = true // the simulated clusters listen on 127.0.0.1
	c, err := kube.NewCluster(kc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestHelm runs the Helm verbs against one simulated cluster.
func TestHelm(t *testing.T) {
	c := simulatedCluster(t)

	// Nothing installed: Status is nil, Uninstall is not an error, Deployed is empty.
	t.Run("nothing installed", func(t *testing.T) {
		rel, err := Status(c, "empty", "absent")
		if err != nil || rel != nil {
			t.Errorf("Status of a missing release: %v, %v; want nil, nil", rel, err)
		}
		if err := Uninstall(c, "empty", "absent", Options{Timeout: 30 * time.Second}); err != nil {
			t.Errorf("Uninstall of a missing release: %v", err)
		}
		if m := (fixture{t, c}).deployed("empty"); len(m) != 0 {
			t.Errorf("Deployed: %v, want none", m)
		}
	})

	// Apply installs, does nothing for the same chart and values, upgrades for new
	// values or a repair; Status and Deployed follow; Uninstall removes it all.
	t.Run("install, upgrade, uninstall", func(t *testing.T) {
		f := fixture{t, c}
		const ns, name = "plain", "tiny-a"
		if rel := f.apply(ns, name, nil, false, nil); rel.Version != 1 || rel.Info.Status != release.StatusDeployed {
			t.Fatalf("install: revision %d %s", rel.Version, rel.Info.Status)
		}
		if g := f.greeting(ns, name); g != "hello" {
			t.Errorf("after the install the ConfigMap says %q", g)
		}
		var log logLines
		if rel := f.apply(ns, name, map[string]any{}, false, &log); rel.Version != 1 || !log.has("already runs") {
			t.Errorf("the same chart and values made revision %d (log %v), want revision 1 left alone", rel.Version, log.lines)
		}
		if rel := f.apply(ns, name, map[string]any{"greeting": "hi"}, false, nil); rel.Version != 2 {
			t.Errorf("new values: revision %d, want 2", rel.Version)
		}
		if g := f.greeting(ns, name); g != "hi" {
			t.Errorf("after the upgrade the ConfigMap says %q", g)
		}
		if err := c.Clientset.CoreV1().ConfigMaps(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if rel := f.apply(ns, name, map[string]any{"greeting": "hi"}, true, nil); rel.Version != 3 {
			t.Errorf("repair: revision %d, want 3", rel.Version)
		}
		if g := f.greeting(ns, name); g != "hi" {
			t.Errorf("the repair did not create the ConfigMap again (%q)", g)
		}
		rel, err := Status(c, ns, name)
		if err != nil || rel == nil || rel.Version != 3 || rel.Info.Status != release.StatusDeployed {
			t.Errorf("Status: %v, %v; want revision 3 deployed", rel, err)
		}
		if m := f.deployed(ns); !maps.Equal(m, map[string]int{name: 3}) {
			t.Errorf("Deployed: %v, want %s at 3", m, name)
		}
		if err := Uninstall(c, ns, name, Options{Timeout: 30 * time.Second}); err != nil {
			t.Fatal(err)
		}
		if rel, err := Status(c, ns, name); rel != nil || err != nil {
			t.Errorf("Status after the uninstall: %v, %v", rel, err)
		}
		if g := f.greeting(ns, name); g != "" {
			t.Errorf("the ConfigMap survived the uninstall")
		}
	})

	// A release an interrupted operation left pending-* is unlocked by Apply: the
	// pending revision becomes failed, and the install or upgrade goes through.
	unlocks := []struct {
		name string
		// leave installs what it needs and leaves the release pending.
		leave        func(f fixture, cfg *helmaction.Configuration, ns, name string)
		pendingRev   int
		wantDeployed int
	}{
		{"upgrade interrupted after its new revision was stored", func(f fixture, cfg *helmaction.Configuration, ns, name string) {
			f.apply(ns, name, nil, false, nil)
			last, err := cfg.Releases.Last(name)
			if err != nil {
				f.t.Fatal(err)
			}
			next := *last
			next.Version = 2
			next.Info = &release.Info{FirstDeployed: last.Info.FirstDeployed, LastDeployed: last.Info.LastDeployed,
				Status: release.StatusPendingUpgrade, Description: "Preparing upgrade"}
			if err := cfg.Releases.Create(&next); err != nil {
				f.t.Fatal(err)
			}
		}, 2, 3},
		{"last revision marked pending-upgrade", func(f fixture, cfg *helmaction.Configuration, ns, name string) {
			f.apply(ns, name, nil, false, nil)
			last, err := cfg.Releases.Last(name)
			if err != nil {
				f.t.Fatal(err)
			}
			last.SetStatus(release.StatusPendingUpgrade, "Preparing upgrade")
			if err := cfg.Releases.Update(last); err != nil {
				f.t.Fatal(err)
			}
		}, 1, 2},
		{"first install interrupted", func(f fixture, cfg *helmaction.Configuration, ns, name string) {
			if _, err := f.c.Clientset.CoreV1().Namespaces().Create(context.Background(),
				&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				f.t.Fatal(err)
			}
			rel := &release.Release{Name: name, Namespace: ns, Version: 1, Chart: tinyChart("0.1.0"), Config: map[string]any{},
				Info: &release.Info{Status: release.StatusPendingInstall, Description: "Initial install underway"}}
			if err := cfg.Releases.Create(rel); err != nil {
				f.t.Fatal(err)
			}
		}, 1, 2},
	}
	for i, tc := range unlocks {
		t.Run("unlock/"+tc.name, func(t *testing.T) {
			f := fixture{t, c}
			ns, name := fmt.Sprintf("unlock-%d", i), "tiny"
			cfg, _, err := configFor(c, ns)
			if err != nil {
				t.Fatal(err)
			}
			tc.leave(f, cfg, ns, name)
			// Helm itself refuses to act on the release as it was left.
			up := helmaction.NewUpgrade(cfg)
			up.Namespace = ns
			if _, err := up.Run(name, tinyChart("0.1.0"), map[string]any{}); err == nil || !strings.Contains(err.Error(), "another operation") {
				t.Fatalf("a plain Helm upgrade of the pending release: %v, want Helm's refusal", err)
			}

			var log logLines
			rel := f.apply(ns, name, map[string]any{"greeting": "after"}, false, &log)
			if rel.Version != tc.wantDeployed || rel.Info.Status != release.StatusDeployed {
				t.Errorf("Apply made revision %d %s, want %d deployed", rel.Version, rel.Info.Status, tc.wantDeployed)
			}
			if s := f.revisionStatus(ns, name, tc.pendingRev); s != release.StatusFailed {
				t.Errorf("the pending revision %d is %s, want failed", tc.pendingRev, s)
			}
			if !log.has("interrupted operation") {
				t.Errorf("the unlock is not logged: %v", log.lines)
			}
			if g := f.greeting(ns, name); g != "after" {
				t.Errorf("the ConfigMap says %q, want the new values' greeting", g)
			}
			if m := f.deployed(ns); !maps.Equal(m, map[string]int{name: tc.wantDeployed}) {
				t.Errorf("Deployed: %v, want %s at %d", m, name, tc.wantDeployed)
			}
			if rel, err := Status(c, ns, name); err != nil || rel == nil || rel.Version != tc.wantDeployed {
				t.Errorf("Status: %v, %v; want revision %d", rel, err, tc.wantDeployed)
			}
		})
	}

	t.Run("image mirror", func(t *testing.T) {
		ch := &chart.Chart{
			Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "pod", Version: "0.1.0"},
			Templates: []*chart.File{{Name: "templates/pod.yaml", Data: []byte(`apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}
spec:
  containers:
    - name: c
      image: ghcr.io/acme/app:1
`)}},
		}
		apply := func(mirror string) (*release.Release, string) {
			t.Helper()
			rel, err := Apply(context.Background(), c, Release{Namespace: "mirrored", Name: "app", Chart: ch, Mirror: mirror}, Options{Timeout: 60 * time.Second})
			if err != nil {
				t.Fatalf("Apply with mirror %q: %v", mirror, err)
			}
			pod, err := c.Clientset.CoreV1().Pods("mirrored").Get(context.Background(), "app", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return rel, pod.Spec.Containers[0].Image
		}
		rel, img := apply("mirror.example:5000/m")
		if img != "mirror.example:5000/m/ghcr.io/acme/app:1" || rel.Labels[mirrorLabel] == "" {
			t.Fatalf("installed with a mirror: image %q, labels %v", img, rel.Labels)
		}
		if again, _ := apply("mirror.example:5000/m"); again.Version != rel.Version {
			t.Errorf("the same mirror upgraded the release again (revision %d → %d)", rel.Version, again.Version)
		}
		back, img := apply("")
		if img != "ghcr.io/acme/app:1" || back.Version == rel.Version || back.Labels[mirrorLabel] != "" {
			t.Errorf("without the mirror: image %q, revision %d (was %d), labels %v", img, back.Version, rel.Version, back.Labels)
		}
	})
}
