package kit

import (
	"context"
	"fmt"
	"time"

	"helm.sh/helm/v3/pkg/release"

	"runr.dev/console/engine"
	"runr.dev/console/helm"
	"runr.dev/console/kube"
	"runr.dev/console/store/pglock"
)

// Release is a Helm release the console installs: a chart of its repository (or the
// mirror) with the console's values.
type Release struct {
	Namespace string
	Name      string
	Chart     helm.ChartRef
	Values    map[string]any
	// TakeOwnership adopts resources that exist without Helm's labels.
	TakeOwnership bool
	// Repair upgrades even when the deployed release has this chart and these values.
	Repair bool
}

// HelmOptions are the Helm options of a job's step: its timeout and its log.
func (s *Kit) HelmOptions(jc *engine.JobContext) helm.Options {
	return helm.Options{Timeout: s.Cfg.InstallTimeout, Logf: jc.Logf,
		WaitFor: func(ctx context.Context, what string, cond func(context.Context) (bool, string, error)) error {
			return jc.Wait(ctx, what, engine.WaitOpts{}, cond)
		}}
}

// HelmApply installs or upgrades a release, rendered for the image mirror of the region the
// job acts on, and returns it, holding the cluster-wide lock of the release so that two
// jobs never act on it at once, across consoles.
func (s *Kit) HelmApply(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, r Release) (*release.Release, error) {
	unlock, err := s.lockRelease(ctx, jc, c, r.Namespace, r.Name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	ch, err := s.Charts.Load(ctx, r.Chart)
	if err != nil {
		return nil, err
	}
	mirror, err := s.JobMirror(ctx, jc)
	if err != nil {
		return nil, err
	}
	return helm.Apply(ctx, c, helm.Release{Namespace: r.Namespace, Name: r.Name, Chart: ch, Values: r.Values,
		TakeOwnership: r.TakeOwnership, Repair: r.Repair, Mirror: mirror}, s.HelmOptions(jc))
}

// HelmUninstall removes a release under its lock; a missing one is not an error.
func (s *Kit) HelmUninstall(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, ns, name string) error {
	unlock, err := s.lockRelease(ctx, jc, c, ns, name)
	if err != nil {
		return err
	}
	defer unlock()
	return helm.Uninstall(c, ns, name, s.HelmOptions(jc))
}

// lockRelease takes a PostgreSQL advisory lock for one release on one cluster, on its own
// connection: two jobs never run Helm on the same release at once, whichever console
// runs them, and the lock goes with the connection if the console dies.
func (s *Kit) lockRelease(ctx context.Context, jc *engine.JobContext, c *kube.Cluster, ns, name string) (func(), error) {
	key := "helm|" + kube.ClusterKey(c.KC.Server) + "|" + ns + "|" + name
	lock, err := pglock.Open(ctx, s.Store.DB.DB)
	if err != nil {
		return nil, fmt.Errorf("lock release: %w", err)
	}
	const busy = "another job is changing this release"
	first := true
	try := func(ctx context.Context) (bool, string, error) {
		if first {
			first = false
			ok, err := lock.TryLock(ctx, key)
			return ok, busy, err
		}
		// Then each look queues in PostgreSQL for up to lockLook, so the lock is taken the
		// moment its holder lets go rather than at the next poll.
		ok, err := lock.LockWithin(ctx, key, lockLook)
		return ok, busy, err
	}
	err = jc.Wait(ctx, fmt.Sprintf("Helm release %s/%s to be free", ns, name), engine.WaitOpts{Timeout: 15 * time.Minute, Interval: 10 * time.Millisecond}, try)
	if err != nil {
		lock.Release()
		return nil, err
	}
	return lock.Release, nil
}

// lockLook is how long one look at a busy release lock queues for it.
const lockLook = time.Second
