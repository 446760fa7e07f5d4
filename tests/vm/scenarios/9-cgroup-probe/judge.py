import sys; print(open(sys.argv[1]+"/b1/probe.log").read()); 
