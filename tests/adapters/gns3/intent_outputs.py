# ruff: noqa: E501
"""Show output of IOS, EOS and Junos routers, written in each platform's format, for the
telnet emulators to print (``EmulatedDevice.shows``): R1 has a Full OSPF neighbour
2.2.2.2 (10.0.12.2) and one stuck in Init (3.3.3.3), an established BGP session with
10.0.12.2 and an idle/active one with 10.0.13.3, an OSPF route to 10.0.2.0/24 via
10.0.12.2, interface 1 up and interface 2 down."""

from __future__ import annotations

IOS = {
    "show ip ospf neighbor": """
Neighbor ID     Pri   State           Dead Time   Address         Interface
2.2.2.2           1   FULL/DR         00:00:35    10.0.12.2       GigabitEthernet0/1
3.3.3.3           1   INIT/DROTHER    00:00:31    10.0.13.3       GigabitEthernet0/2
""",
    "show ip bgp summary": """BGP router identifier 1.1.1.1, local AS number 65001
BGP table version is 3, main routing table version 3
2 network entries using 496 bytes of memory
2 path entries using 272 bytes of memory

Neighbor        V           AS MsgRcvd MsgSent   TblVer  InQ OutQ Up/Down  State/PfxRcd
10.0.12.2       4        65002      12      11        3    0    0 00:07:41        1
10.0.13.3       4        65003       0       0        1    0    0 never    Idle
""",
    "show ip route": """Codes: L - local, C - connected, S - static, R - RIP, M - mobile, B - BGP
       D - EIGRP, EX - EIGRP external, O - OSPF, IA - OSPF inter area
       N1 - OSPF NSSA external type 1, N2 - OSPF NSSA external type 2
       E1 - OSPF external type 1, E2 - OSPF external type 2
       i - IS-IS, su - IS-IS summary, L1 - IS-IS level-1, L2 - IS-IS level-2

Gateway of last resort is not set

      10.0.0.0/8 is variably subnetted, 3 subnets, 3 masks
O        10.0.2.0/24 [110/2] via 10.0.12.2, 00:05:12, GigabitEthernet0/1
C        10.0.12.0/30 is directly connected, GigabitEthernet0/1
L        10.0.12.1/32 is directly connected, GigabitEthernet0/1
""",
}

EOS = {
    "show ip ospf neighbor": """Neighbor ID     Instance VRF      Pri State                  Dead Time   Address         Interface
2.2.2.2         1        default  1   FULL                   00:00:33    10.0.12.2       Ethernet1
3.3.3.3         1        default  1   INIT                   00:00:31    10.0.13.3       Ethernet2
""",
    "show ip bgp summary": """BGP summary information for VRF default
Router identifier 1.1.1.1, local AS number 65001
Neighbor Status Codes: m - Under maintenance
  Neighbor         V  AS           MsgRcvd   MsgSent  InQ OutQ  Up/Down State   PfxRcd PfxAcc
  10.0.12.2        4  65002             12        11    0    0 00:07:41 Estab   1      1
  10.0.13.3        4  65003              0         0    0    0 00:00:10 Active
""",
    "show ip route": """
VRF: default
Codes: C - connected, S - static, K - kernel,
       O - OSPF, IA - OSPF inter area, E1 - OSPF external type 1,
       E2 - OSPF external type 2, N1 - OSPF NSSA external type 1,
       N2 - OSPF NSSA external type2, B - BGP, B I - iBGP, B E - eBGP

Gateway of last resort is not set

 O        10.0.2.0/24 [110/20] via 10.0.12.2, Ethernet1
 C        10.0.12.0/30 is directly connected, Ethernet1
""",
    "show ip interface brief": """Interface         IP Address        Status     Protocol         MTU
Ethernet1         10.0.12.1/30      up         up              1500
Ethernet2         10.0.13.1/30      down       down            1500
""",
}

JUNOS = {
    "show ospf neighbor": """Address          Interface              State     ID               Pri  Dead
10.0.12.2        ge-0/0/1.0             Full      2.2.2.2          128    36
10.0.13.3        ge-0/0/2.0             Init      3.3.3.3          128    33
""",
    # without the per-table block Junos prints after "Groups:": ntc-templates' template
    # refuses it (a line that starts with spaces there is an error)
    "show bgp summary": """Groups: 2 Peers: 2 Down peers: 1
Peer                     AS      InPkt     OutPkt    OutQ   Flaps Last Up/Dwn State|#Active/Received/Accepted/Damped...
10.0.12.2             65002         12         11       0       0   1d 4:01:10 Establ
  inet.0: 1/1/1/0
10.0.13.3             65003          0          0       0       0   1d 4:10:02 Active
""",
    "show interfaces ge-0/0/1": """Physical interface: ge-0/0/1, Enabled, Physical link is Up
  Interface index: 149, SNMP ifIndex: 527
  Link-level type: Ethernet, MTU: 1514, Link-mode: Full-duplex, Speed: 1000mbps
""",
    "show interfaces ge-0/0/2": """Physical interface: ge-0/0/2, Enabled, Physical link is Down
  Interface index: 150, SNMP ifIndex: 528
  Link-level type: Ethernet, MTU: 1514, Link-mode: Full-duplex, Speed: 1000mbps
""",
    "show interfaces terse": """Interface               Admin Link Proto    Local                 Remote
ge-0/0/1                up    up
ge-0/0/1.0              up    up   inet     10.0.12.1/30
ge-0/0/2                up    down
ge-0/0/2.0              up    down inet     10.0.13.1/30
""",
}
