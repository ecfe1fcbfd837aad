# make soak: concurrency soak test of the installed extension on a
# throwaway cluster (test/soak/soak.sh); not part of installcheck
SOAK_SECONDS ?= 300
SOAK_CLIENTS ?= 16

.PHONY: soak
soak:
	SOAK_SECONDS=$(SOAK_SECONDS) SOAK_CLIENTS=$(SOAK_CLIENTS) bash test/soak/soak.sh
