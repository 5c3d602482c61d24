package nodes

import (
	"context"
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"runr.dev/console/agent"
	"runr.dev/console/store"
)

// Overcommit factors: the defaults of a new region and the allowed range.
const (
	DefaultFaaSCPUOvercommit    = 3
	DefaultFaaSMemoryOvercommit = 1.5
	MinOvercommit               = 1
	MaxOvercommit               = 10
)

// AdmitRequest is what a project deploy asks of its region's capacity.
type AdmitRequest struct {
	ProjectID string
	CPUm      int64
	MemoryMi  int64
	AlwaysOn  bool
}

// Resources are CPU in millicores and memory in MiB.
type Resources struct {
	CPUm     int64 `json:"cpu_m"`
	MemoryMi int64 `json:"memory_mi"`
}

// NodeCapacity is one node's part in the region capacity.
type NodeCapacity struct {
	Name    string `json:"name"`
	Counted bool   `json:"counted"`
	// Reason says why the node counts or not.
	Reason      string    `json:"reason"`
	Allocatable Resources `json:"allocatable"`
	// Platform is what the platform's own workloads request on the node.
	Platform Resources `json:"platform"`
}

// Capacity is what the counted nodes leave for project workloads: their allocatable
// resources minus what the platform's own workloads request on them.
type Capacity struct {
	// Dedicated is true when the region has dedicated workers: only they count.
	Dedicated   bool           `json:"dedicated"`
	Nodes       []NodeCapacity `json:"nodes"`
	Allocatable Resources      `json:"allocatable"`
	Platform    Resources      `json:"platform"`
	Total       Resources      `json:"total"`
}

// ComputeCapacity computes the region capacity. The counted nodes are the dedicated
// workers when there are any, else every node; of those, a node counts when projects can
// be scheduled on it: not cordoned and without a NoSchedule or NoExecute taint that
// projects do not tolerate (they tolerate the dedicated workers' taint only). The
// platform's own workloads are the pods outside the project namespaces (the namespaces
// labelled runr.dev/region): kube-system, knative-*, observability, runr-registry...
func ComputeCapacity(nodes []corev1.Node, pods []corev1.Pod, projectNamespaces map[string]bool, dedicated []string) Capacity {
	sel := map[string]bool{}
	for _, n := range dedicated {
		sel[n] = true
	}
	platform := map[string]*[2]int64{} // node -> cpu m, memory bytes
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" || projectNamespaces[p.Namespace] || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		cpu, mem := agent.PodRequests(p)
		if platform[p.Spec.NodeName] == nil {
			platform[p.Spec.NodeName] = &[2]int64{}
		}
		platform[p.Spec.NodeName][0] += cpu
		platform[p.Spec.NodeName][1] += mem
	}
	c := Capacity{Dedicated: len(sel) > 0, Nodes: []NodeCapacity{}}
	var allocMem, platMem int64
	for i := range nodes {
		n := &nodes[i]
		nc := NodeCapacity{Name: n.Name, Allocatable: Resources{CPUm: n.Status.Allocatable.Cpu().MilliValue(), MemoryMi: n.Status.Allocatable.Memory().Value() >> 20}}
		var pmem int64
		if pl := platform[n.Name]; pl != nil {
			nc.Platform = Resources{CPUm: pl[0], MemoryMi: ceilMi(pl[1])}
			pmem = pl[1]
		}
		nc.Counted, nc.Reason = counted(n, sel)
		if nc.Counted {
			c.Allocatable.CPUm += nc.Allocatable.CPUm
			c.Platform.CPUm += nc.Platform.CPUm
			allocMem += n.Status.Allocatable.Memory().Value()
			platMem += pmem
		}
		c.Nodes = append(c.Nodes, nc)
	}
	c.Allocatable.MemoryMi = allocMem >> 20
	c.Platform.MemoryMi = ceilMi(platMem)
	c.Total = Resources{CPUm: max(0, c.Allocatable.CPUm-c.Platform.CPUm), MemoryMi: max(0, c.Allocatable.MemoryMi-c.Platform.MemoryMi)}
	return c
}

// counted says whether a node counts toward the capacity, and why.
func counted(n *corev1.Node, sel map[string]bool) (bool, string) {
	if len(sel) > 0 && !sel[n.Name] {
		return false, "not a dedicated worker"
	}
	if n.Spec.Unschedulable {
		return false, "cordoned"
	}
	for _, t := range n.Spec.Taints {
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if len(sel) > 0 && t.Key == DedicatedTaint.Key && t.Value == DedicatedTaint.Value {
			continue
		}
		return false, "taint " + TaintString(t) + " keeps projects off"
	}
	if len(sel) > 0 {
		return true, "dedicated worker"
	}
	return true, "schedulable"
}

// BudgetLine is one resource of one budget, shown as a bar: Gross long, of which
// Reserved is held by something else, Used by the budget's projects, and Free is left.
type BudgetLine struct {
	Gross    int64 `json:"gross"`
	Reserved int64 `json:"reserved"`
	// Budget is Gross - Reserved: what the budget's projects may request in all.
	Budget int64 `json:"budget"`
	Used   int64 `json:"used"`
	// Free is Budget - Used; negative when the budget is overspent (it shrank).
	Free int64 `json:"free"`
}

// Budget is one admission budget: CPU in millicores, memory in MiB.
type Budget struct {
	Name     string     `json:"name"`
	CPU      BudgetLine `json:"cpu"`
	Memory   BudgetLine `json:"memory"`
	Projects int        `json:"projects"`
}

// Budgets are the two admission budgets of a region.
type Budgets struct {
	CPUOvercommit    float64 `json:"faas_cpu_overcommit"`
	MemoryOvercommit float64 `json:"faas_memory_overcommit"`
	AlwaysOn         Budget  `json:"always_on"`
	FaaS             Budget  `json:"faas"`
}

// ComputeBudgets splits the capacity into the two budgets. The spec's table of the split
// was lost; this is the decided split: the always-on budget is the capacity itself
// (always-on projects reserve their full requests), the FaaS budget is capacity × the
// overcommit factor minus what the always-on projects reserve, and a FaaS project's
// requests count against the FaaS budget.
func ComputeBudgets(c Capacity, cpuFactor, memFactor float64, alwaysOn, faas store.Reservation) Budgets {
	b := Budgets{CPUOvercommit: cpuFactor, MemoryOvercommit: memFactor}
	// Always-on: the bar is the counted nodes' allocatable resources, of which the
	// platform's workloads hold a part; what is left is the capacity (c.Total).
	b.AlwaysOn = Budget{Name: "always-on", Projects: alwaysOn.Projects,
		CPU:    line(c.Allocatable.CPUm, c.Platform.CPUm, alwaysOn.CPUm),
		Memory: line(c.Allocatable.MemoryMi, c.Platform.MemoryMi, alwaysOn.MemoryMi)}
	// FaaS: the bar is the capacity × the factor, of which the always-on projects hold
	// their reservations.
	b.FaaS = Budget{Name: "FaaS", Projects: faas.Projects,
		CPU:    line(overcommit(c.Total.CPUm, cpuFactor), alwaysOn.CPUm, faas.CPUm),
		Memory: line(overcommit(c.Total.MemoryMi, memFactor), alwaysOn.MemoryMi, faas.MemoryMi)}
	return b
}

func line(gross, reserved, used int64) BudgetLine {
	budget := max(0, gross-reserved)
	return BudgetLine{Gross: gross, Reserved: reserved, Budget: budget, Used: used, Free: budget - used}
}

func overcommit(v int64, factor float64) int64 {
	if factor < MinOvercommit {
		factor = MinOvercommit
	}
	return int64(math.Floor(float64(v) * factor))
}

// CapacityReport is GET /api/knative-regions/{id}/capacity: the capacity and its budgets.
type CapacityReport struct {
	Capacity
	Budgets
}

// RegionCapacity reads the region's nodes and the platform's pods from its cluster and
// its running projects' requests from the database (leaving out exceptProject, the one
// being deployed), and computes the capacity and the budgets.
func (s *Service) RegionCapacity(ctx context.Context, r *store.Region, exceptProject string) (*CapacityReport, error) {
	c, err := s.RegionCluster(r)
	if err != nil {
		return nil, err
	}
	st, err := readCluster(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("region %s: %w", r.Name, err)
	}
	alwaysOn, faas, err := s.Store.ProjectReservations(ctx, r.ID, exceptProject)
	if err != nil {
		return nil, err
	}
	capa := ComputeCapacity(st.Nodes, st.Pods, st.ProjectNamespaces, r.Nodes)
	return &CapacityReport{Capacity: capa, Budgets: ComputeBudgets(capa, r.FaaSCPUOvercommit, r.FaaSMemoryOvercommit, alwaysOn, faas)}, nil
}

// Shortfall is one resource a deploy asks more of than its budget has free.
type Shortfall struct {
	Resource string `json:"resource"` // CPU | memory
	Unit     string `json:"unit"`     // m | Mi
	Asked    int64  `json:"asked"`
	Budget   int64  `json:"budget"`
	Used     int64  `json:"used"`
	Free     int64  `json:"free"`
}

// AdmissionError refuses a deploy that does not fit its budget, with the numbers.
type AdmissionError struct {
	Region     string      `json:"region"`
	Budget     string      `json:"budget"` // always-on | FaaS
	Shortfalls []Shortfall `json:"shortfalls"`
}

func (e *AdmissionError) Error() string {
	parts := make([]string, len(e.Shortfalls))
	for i, sf := range e.Shortfalls {
		free := fmt.Sprintf("%d%s free", sf.Free, sf.Unit)
		if sf.Free < 0 {
			free = fmt.Sprintf("none free (%d%s over)", -sf.Free, sf.Unit)
		}
		parts[i] = fmt.Sprintf("%s: this deploy asks %d%s; the %s budget is %d%s, %d%s used: %s",
			sf.Resource, sf.Asked, sf.Unit, e.Budget, sf.Budget, sf.Unit, sf.Used, sf.Unit, free)
	}
	return strings.Join(parts, "; ")
}

// CheckAdmission decides whether a deploy fits its budget (nil when it does).
func CheckAdmission(region string, b Budgets, req AdmitRequest) *AdmissionError {
	bud := b.FaaS
	if req.AlwaysOn {
		bud = b.AlwaysOn
	}
	e := &AdmissionError{Region: region, Budget: bud.Name}
	check := func(name, unit string, ask int64, l BudgetLine) {
		if ask > 0 && ask > l.Free {
			e.Shortfalls = append(e.Shortfalls, Shortfall{Resource: name, Unit: unit, Asked: ask, Budget: l.Budget, Used: l.Used, Free: l.Free})
		}
	}
	check("CPU", "m", req.CPUm, bud.CPU)
	check("memory", "Mi", req.MemoryMi, bud.Memory)
	if len(e.Shortfalls) == 0 {
		return nil
	}
	return e
}

// Admit decides whether a deploy fits the region's budgets; it returns an error that
// gives the numbers when it does not (an *AdmissionError), or the error that kept the
// capacity from being read.
func (s *Service) Admit(ctx context.Context, r *store.Region, req AdmitRequest) error {
	rep, err := s.RegionCapacity(ctx, r, req.ProjectID)
	if err != nil {
		return fmt.Errorf("admission: %w", err)
	}
	if e := CheckAdmission(r.Name, rep.Budgets, req); e != nil {
		return e
	}
	return nil
}
