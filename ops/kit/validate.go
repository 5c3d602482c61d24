package kit

import (
	"net"
	"strconv"
)

// ValidateHostPort checks an address given as host:port.
func ValidateHostPort(a string) string {
	host, port, err := net.SplitHostPort(a)
	if err != nil || host == "" {
		return "Give the address as host:port, e.g. redis.example.com:6379."
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "The port must be a number from 1 to 65535."
	}
	return ""
}
