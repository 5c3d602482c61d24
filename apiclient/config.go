package apiclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Environment variables that override the saved login (for automation).
const (
	EnvURL   = "RUNR_URL"
	EnvToken = "RUNR_TOKEN"
)

// Login is what `runr login` saves: the console and the token.
type Login struct {
	URL   string `json:"url"`
	Token string `json:"token"`
}

// ConfigPath is the file the login is kept in: runr/config.json in the user's config
// directory ($XDG_CONFIG_HOME, ~/.config, …).
func ConfigPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("find the user's config directory: %w", err)
	}
	return filepath.Join(dir, "runr", "config.json"), nil
}

// LoadLogin reads the saved login; RUNR_URL and RUNR_TOKEN override its fields.
func LoadLogin() (Login, error) {
	var l Login
	path, err := ConfigPath()
	if err != nil {
		return l, err
	}
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return l, fmt.Errorf("read %s: %w", path, err)
	default:
		if err := json.Unmarshal(raw, &l); err != nil {
			return l, fmt.Errorf("read %s: %w", path, err)
		}
	}
	if v := os.Getenv(EnvURL); v != "" {
		l.URL = v
	}
	if v := os.Getenv(EnvToken); v != "" {
		l.Token = v
	}
	l.URL = strings.TrimRight(l.URL, "/")
	return l, nil
}

// SaveLogin writes the login, readable by the user alone (0600, in a 0700 directory).
func SaveLogin(l Login) (string, error) {
	path, err := ConfigPath()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	raw, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return "", fmt.Errorf("save the login: %w", err)
	}
	// Write a new file and rename it over the old one: the token is never in a file
	// another user could read, not even for a moment.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".config-*.json")
	if err != nil {
		return "", fmt.Errorf("save the login: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return "", fmt.Errorf("save the login: %w", err)
	}
	if _, err := tmp.Write(append(raw, '\n')); err != nil {
		tmp.Close()
		return "", fmt.Errorf("save the login: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("save the login: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("save the login: %w", err)
	}
	return path, nil
}

// RemoveLogin forgets the saved token (the console's URL stays).
func RemoveLogin() (string, error) {
	path, err := ConfigPath()
	if err != nil {
		return "", err
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return path, nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	var l Login
	_ = json.Unmarshal(raw, &l)
	l.Token = ""
	return SaveLogin(l)
}
