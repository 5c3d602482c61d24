package config

import "testing"

// TestImageMovesOfTheSpec: only RunR's own packages move, from either earlier namespace,
// and a mirror's path, another package of the organisation and a current reference stay.
func TestImageMovesOfTheSpec(t *testing.T) {
	for ref, want := range map[string]string{
		"ghcr.io/runrsh/runr-agent:0.4.2":            "ghcr.io/brf-tech/runr/agent:0.4.2",
		"ghcr.io/runrsh/reqs/redis:7.4":              "ghcr.io/brf-tech/runr/reqs/redis:7.4",
		"ghcr.io/runrsh/python-runtime:3.12":         "ghcr.io/brf-tech/python-runtime:3.12",
		"ghcr.io/brf-tech/runr-wrapper:0.5.1":        "ghcr.io/brf-tech/runr/wrapper:0.5.1",
		"ghcr.io/brf-tech/reqs/traefik:v3.7.4":       "ghcr.io/brf-tech/runr/reqs/traefik:v3.7.4",
		"ghcr.io/brf-tech/runr/agent:0.5.2":          "",
		"ghcr.io/brf-tech/other:1":                   "",
		"mirror.example/ghcr.io/runrsh/runr-agent:1": "",
		"docker.io/library/redis:7.4":                "",
	} {
		got, moved := MoveImage(DefaultImageMoves, ref)
		if want == "" && (moved || got != ref) || want != "" && (!moved || got != want) {
			t.Errorf("%s: %s (moved %v), want %q", ref, got, moved, want)
		}
	}
}

// TestImageMovesSetting: RUNR_IMAGE_MOVES replaces the list in its order, "none" empties
// it, and a pair that is not one is refused.
func TestImageMovesSetting(t *testing.T) {
	t.Setenv("RUNR_IMAGE_MOVES", "registry.local/old/=registry.local/new/, registry.local/older/=registry.local/new/")
	c, err := FromEnv()
	if err != nil || len(c.ImageMoves) != 2 || c.ImageMoves[1] != (ImageMove{"registry.local/older/", "registry.local/new/"}) {
		t.Fatalf("%v %+v", err, c)
	}
	t.Setenv("RUNR_IMAGE_MOVES", "none")
	if c, err := FromEnv(); err != nil || len(c.ImageMoves) != 0 {
		t.Fatalf("none: %v %+v", err, c)
	}
	for _, bad := range []string{"registry.local/old/", "a=a", "=b"} {
		t.Setenv("RUNR_IMAGE_MOVES", bad)
		if _, err := FromEnv(); err == nil {
			t.Errorf("RUNR_IMAGE_MOVES=%q is accepted", bad)
		}
	}
	t.Setenv("RUNR_IMAGE_MOVES", "")
	if c, err := FromEnv(); err != nil || len(c.ImageMoves) != len(DefaultImageMoves) {
		t.Fatalf("default: %v", err)
	}
}
