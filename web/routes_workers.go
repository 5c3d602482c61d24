package web

// workerRoutes are the routes of the Workers tab (nodes, dedicated workers, capacity).
func (s *Server) workerRoutes() []Route {
	return nil
}
