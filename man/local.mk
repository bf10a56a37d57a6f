dist_man_MANS += man/trellis.7 man/trellis-topo.1
