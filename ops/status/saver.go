package status

import (
	"context"
	"time"
)

// checkSaver saves a sweep's region checks together: one statement per tenant for what the
// looks finished within saveEvery (at most saveBatch checks), instead of one per look. A
// fleet of clusters that do not answer would otherwise cost two statements per region, and
// queue the console's other work (agents, pages) behind them in the database's pool.
type checkSaver struct {
	in   chan []tenantCheck
	done chan struct{}
}

const (
	saveEvery = 100 * time.Millisecond
	saveBatch = 500
)

// newCheckSaver starts the saver of one sweep; close ends it once all is saved.
func (s *Service) newCheckSaver(ctx context.Context) *checkSaver {
	cs := &checkSaver{in: make(chan []tenantCheck, 64), done: make(chan struct{})}
	go func() {
		defer close(cs.done)
		t := time.NewTicker(saveEvery)
		defer t.Stop()
		var batch []tenantCheck
		flush := func() {
			s.saveChecks(ctx, batch)
			batch = nil
		}
		for {
			select {
			case more, ok := <-cs.in:
				if !ok {
					flush()
					return
				}
				if batch = append(batch, more...); len(batch) >= saveBatch {
					flush()
				}
			case <-t.C:
				if len(batch) > 0 {
					flush()
				}
			}
		}
	}()
	return cs
}

// save queues a look's checks.
func (cs *checkSaver) save(checks []tenantCheck) { cs.in <- checks }

// close saves what is queued and waits for it.
func (cs *checkSaver) close() {
	close(cs.in)
	<-cs.done
}
